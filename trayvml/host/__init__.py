"""The host layer: the machine's own CPU, memory, disk, network and processes, via psutil."""

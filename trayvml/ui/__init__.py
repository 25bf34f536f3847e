"""The user interface: Qt and pyqtgraph live here and nowhere else."""

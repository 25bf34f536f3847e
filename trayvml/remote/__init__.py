"""Remote GPUs: exporters and Prometheus servers read over HTTP into the same Sample as local GPUs."""

"""Console tools: tflite-run (and, later, the float-vs-quantized verification tool)."""

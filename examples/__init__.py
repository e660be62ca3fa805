"""Examples shipped with xweave: the small CNN of the main job (`small_cnn.onnx`, written
by `make_small_cnn.py`) and `gemm8x8`, a second accelerator described only through the
designer API (`xweave.accel.api`)."""

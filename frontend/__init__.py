"""Ways into xrelay besides IR text: the Python graph builder (`builder.py`) and the ONNX
importer (`onnx_import.py`, on the builder)."""

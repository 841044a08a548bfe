"""Serving an artifact on Ray Serve (the optional extra `serve`: `pip install 'xrelay[serve]'`).

    python -m xrelay.serve model.xrelay --host 127.0.0.1 --port 8000 --replicas 2
    out = xrelay.serve.client.infer("http://127.0.0.1:8000/", x=x)   # {"output_0": ...}

`POST /` with an `.npz` of the named inputs (batch axis first) answers 200 and an `.npz` of the
outputs `output_0`, `output_1`, ...; a bad request is a 400 with the runtime's message.
Each replica loads the artifact with `xrelay.runtime` alone and batches concurrent requests
(`xrelay.serve.deployment`); `--address` deploys on an existing Ray cluster. Importing this
package imports neither Ray nor the compiler.
"""

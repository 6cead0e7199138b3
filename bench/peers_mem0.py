"""mem0's side of bench/peers.py: run by the interpreter of mem0's own virtualenv (var/peers/venv), never the
project's. bench/peers.py imports `dia_ids` from it (this module imports only the standard library at its top).

Reads one job as JSON on stdin: the turns to add, the questions to ask, where to keep the Qdrant store, the
MiniLM model file with its sha256 and the tokenizer file. Writes one JSON object on stdout: the seconds the adds
took, each question's seconds (asked once, then all again) and its results in rank order (each as a list of the one
dia id it holds).

With a `port` in the job, it serves that store instead, as mem0's own REST server does (`server/main.py` of mem0's
repository: FastAPI on uvicorn, a plain `def` endpoint that FastAPI runs on its thread pool, its answer encoded by
FastAPI's `jsonable_encoder`): `POST /search` with `query`, `user_id` and `top_k` answers mem0's `search()` as it
returns it, until terminated. Of that server's request path it keeps the cheapest authentication, its `X-API-Key`
compared with the admin key (no database read), and leaves out what needs its database: API keys of users, and the
middleware that writes a row per request. So mem0's served figure is, if anything, a little low. bench/peers.py is
its client, over loopback, as it is this project's.

mem0 runs in process, as its own quickstart does: `Memory.from_config` with a local, on-disk Qdrant (qdrant-client's
local mode) and `add(..., infer=False)`, so no LLM is ever called; each turn is one `add` carrying its dia id in
the metadata, and the results are mapped back through it. The embedder is the project's own all-MiniLM-L6-v2 int8
ONNX file run by onnxruntime (the same bytes, checked by sha256, the same tokenizer, mean pooling and L2
normalisation), wrapped in mem0's `EmbeddingBase`: both sides then embed with one model and one runtime (the
project's side through its rewrite of the file for this CPU, bench/peers.py).
"""

# No `from __future__ import annotations`: FastAPI reads the endpoint's annotations at run time, and `serve`'s
# request model is local to it (FastAPI is only in mem0's virtualenv: nothing of it is imported at this module's top).
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_TOKENS = 256  # as the project's embedder (sentence-transformers' max_seq_length for this model)


def onnx_embedder(model: Path, sha256: str, tokenizer_path: Path, threads: int) -> Any:
    """A mem0 embedder over the MiniLM ONNX file: `embed` one text, `embed_batch` several."""
    import numpy as np
    import onnxruntime
    from mem0.embeddings.base import EmbeddingBase
    from tokenizers import Tokenizer

    model_bytes = model.read_bytes()
    if hashlib.sha256(model_bytes).hexdigest() != sha256:
        raise SystemExit(f"{model} is not the pinned MiniLM file (sha256 differs)")
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")  # noqa: S106
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model_bytes, sess_options=options, providers=["CPUExecutionProvider"])
    inputs = [node.name for node in session.get_inputs()]

    class OnnxMiniLM(EmbeddingBase):
        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return self.embed_batch([text], memory_action)[0]

        def embed_batch(self, texts: list[str], memory_action: str | None = "add") -> list[list[float]]:
            encodings = tokenizer.encode_batch(texts)
            columns = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            (hidden,) = session.run(None, {name: columns[name] for name in inputs})[:1]
            mask = columns["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            normalised = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            vectors: list[list[float]] = normalised.tolist()
            return vectors

    return OnnxMiniLM()


def memory(job: dict[str, Any]) -> Any:
    from mem0 import Memory

    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {"collection_name": "peers", "embedding_model_dims": 384, "path": job["store"], "on_disk": True},
        },
        # Built but never called: infer=False adds the messages as they are. A loopback address that answers
        # nothing, so a call would fail at once instead of reaching out.
        "llm": {"provider": "openai", "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": 384}},
        "history_db_path": str(Path(job["store"]) / "history.db"),
    }
    found = Memory.from_config(config)
    found.embedding_model = onnx_embedder(Path(job["model"]), job["sha256"], Path(job["tokenizer"]), job["threads"])
    return found


# What mem0 embeds of a turn. mem0 keeps a message's `name` only as metadata (actor_id) and has no field for
# its time, while this project stores both as fields and uses them in search; `speaker` and `speaker-date` put
# them in the text, where mem0's search can see them.
TEXTS = {
    "plain": "{text}",
    "speaker": "{speaker}: {text}",
    "speaker-date": "[{when}] {speaker}: {text}",
}


def timed(
    ask: Callable[[Any], Any], items: list[Any], clock: Callable[[], float] = time.perf_counter
) -> tuple[list[float], list[Any]]:
    """Each item asked in turn: the seconds each took, and each answer (every timed loop of both sides)."""
    seconds, answers = [], []
    for item in items:
        began = clock()
        answers.append(ask(item))
        seconds.append(clock() - began)
    return seconds, answers


def dia_ids(results: list[dict[str, Any]]) -> list[list[str]]:
    """Each result of a mem0 search, in rank order, as the dia id of the turn it holds (bench/peers.py scores them)."""
    return [[dia_id] if (dia_id := (result.get("metadata") or {}).get("dia_id")) else [] for result in results]


def serve(job: dict[str, Any]) -> None:
    """mem0's search over HTTP on the job's store, on 127.0.0.1:`port` (uvicorn, with the project's pins of uvicorn,
    uvloop and httptools, and no access log, as bench/serving.py serves this project)."""
    import secrets

    import uvicorn
    from fastapi import Depends, FastAPI, HTTPException
    from fastapi.security import APIKeyHeader
    from pydantic import BaseModel

    mem = memory(job)
    mem.embedding_model.embed("Warm-up.", "search")
    app = FastAPI()
    api_key = APIKeyHeader(name="X-API-Key", auto_error=False)

    def admin_key(given: str | None = Depends(api_key)) -> None:
        if given is None or not secrets.compare_digest(given, job["api_key"]):
            raise HTTPException(status_code=401, detail="Authentication required.")

    class Search(BaseModel):
        query: str
        user_id: str
        top_k: int = 10

    # A plain def, as mem0's server: FastAPI runs it on its thread pool; no response model, as there.
    @app.post("/search", response_model=None)
    def search(asked: Search, _auth: None = Depends(admin_key)) -> Any:
        return mem.search(asked.query, top_k=asked.top_k, filters={"user_id": asked.user_id})

    @app.get("/healthz")
    def healthz() -> dict[str, bool]:
        return {"ok": True}

    uvicorn.run(app, host="127.0.0.1", port=job["port"], log_level="warning", access_log=False)


def main() -> None:
    job = json.load(sys.stdin)
    if job.get("port"):
        serve(job)
        return
    mem = memory(job)
    user = job["user"]
    mem.embedding_model.embed("Warm-up.", "search")  # the model's first run, outside the measurement
    began = time.perf_counter()
    for turn in job["turns"]:
        content = TEXTS[job["text"]].format(**turn)
        message = {"role": turn["role"], "content": content, "name": turn["speaker"]}
        mem.add([message], user_id=user, metadata={"dia_id": turn["dia_id"], "session": turn["session"]}, infer=False)
    added = time.perf_counter() - began

    def searched(question: str) -> Any:
        return mem.search(question, top_k=job["limit"], filters={"user_id": user})["results"]

    seconds, answers = timed(searched, job["questions"])
    found = [dia_ids(results) for results in answers]
    again, _ = timed(searched, job["questions"])  # the same questions a second time, as the other side asks them
    # The query's embedding alone: the part of a search both sides pay alike.
    embedded, _ = timed(lambda question: mem.embedding_model.embed(question, "search"), job["questions"])
    import mem0

    json.dump(
        {
            "ingest_seconds": added,
            "query_seconds": seconds,
            "again_seconds": again,
            "embed_seconds": embedded,
            "found": found,
            "stored": len(mem.get_all(filters={"user_id": user}, top_k=100_000)["results"]),
            "version": f"mem0ai {mem0.__version__}" if hasattr(mem0, "__version__") else "mem0ai",
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()

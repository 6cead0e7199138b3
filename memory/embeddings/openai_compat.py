"""Embeddings from any OpenAI-compatible `POST {url}/embeddings` endpoint: OpenAI, Ollama, vLLM (SPEC §8a).

Every failure (timeout, refused connection, HTTP error, malformed or mis-shaped answer) becomes
`EmbedderUnavailable`, and no message ever carries the API key, since messages end up in logs and API errors.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

import httpx

from memory.embeddings import EmbedderUnavailable

# Enough of an error body to diagnose a failure without copying a whole HTML error page into the logs.
_BODY_EXCERPT_CHARS = 200


class OpenAICompatibleEmbedder:
    """A remote embedding model; `dimensions` 0 means "learn it from the first answer, then hold to it"."""

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str = "",
        timeout_s: float = 30,
        dimensions: int = 0,
        *,
        batch_size: int = 64,
    ) -> None:
        self._endpoint = url.rstrip("/") + "/embeddings"
        self._shown_endpoint = _without_credentials(self._endpoint)
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._dimensions = dimensions
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of texts; use embed_query for one text")
        if not texts:
            return []
        vectors: list[list[float]] = []
        # One client per call: connections are reused across the batches of a call, and no pool is shared
        # between threads or inherited by forked worker processes.
        with httpx.Client(timeout=self._timeout_s) as client:
            for start in range(0, len(texts), self._batch_size):
                vectors.extend(self._embed_batch(client, list(texts[start : start + self._batch_size])))
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    def query_run(self, text: str) -> Callable[[], list[float]]:
        return functools.partial(self.embed_query, text)  # all of it a call: waiting lets the interpreter go

    def _embed_batch(self, client: httpx.Client, texts: list[str]) -> list[list[float]]:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = client.post(self._endpoint, json={"model": self._model, "input": texts}, headers=headers)
        except httpx.TimeoutException:
            raise self._unavailable(f"did not answer within {self._timeout_s} s") from None
        except httpx.HTTPError as exc:
            # `from None`: the chained exception would only repeat this, and keeps the request out of tracebacks.
            raise self._unavailable(f"cannot be reached ({type(exc).__name__}: {exc})") from None
        except (httpx.InvalidURL, UnicodeEncodeError):
            raise self._unavailable("cannot be called: check EMBEDDING_URL and EMBEDDING_API_KEY") from None
        if response.status_code >= 400:
            excerpt = response.text[:_BODY_EXCERPT_CHARS]
            raise self._unavailable(f"answered HTTP {response.status_code}: {excerpt}")
        try:
            payload = response.json()
        except ValueError:
            raise self._unavailable("answered with something that is not JSON") from None
        vectors = _vectors_from(payload, expected_count=len(texts))
        if vectors is None:
            raise self._unavailable(f"answered without one numeric `data[i].embedding` per input ({len(texts)})")
        self._check_dimensions(len(vectors[0]))
        return [_l2_normalised(vector) for vector in vectors]

    def _check_dimensions(self, size: int) -> None:
        with self._lock:
            if self._dimensions == 0:
                self._dimensions = size
            elif size != self._dimensions:
                raise self._unavailable(
                    f"answered {size}-dimensional vectors, expected {self._dimensions} (EMBEDDING_DIMENSIONS)"
                )

    def _unavailable(self, problem: str) -> EmbedderUnavailable:
        message = f"The embedding endpoint {self._shown_endpoint} (model {self._model!r}) {problem}."
        # A server may echo the key back in its error body; it must not travel on into logs.
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return EmbedderUnavailable(message)


def _vectors_from(payload: object, *, expected_count: int) -> list[list[float]] | None:
    """The answer's vectors in input order, or None if it is not a well-formed answer for this many inputs."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    items = payload["data"]
    if len(items) != expected_count or not all(isinstance(item, dict) for item in items):
        return None
    # OpenAI documents `index`; servers that omit it answer in input order.
    indexes = [item.get("index", position) for position, item in enumerate(items)]
    if not all(isinstance(index, int) and not isinstance(index, bool) for index in indexes):
        return None
    if sorted(indexes) != list(range(expected_count)):
        return None
    by_index = dict(zip(indexes, (item.get("embedding") for item in items), strict=True))
    vectors = [by_index[index] for index in range(expected_count)]
    if not all(_is_vector(vector) for vector in vectors):
        return None
    if len({len(vector) for vector in vectors}) != 1:
        return None
    return [[float(value) for value in vector] for vector in vectors]


def _is_vector(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in value)
    )


def _l2_normalised(vector: list[float]) -> list[float]:
    # Normalised here too, so cosine and inner-product search agree whatever the server does.
    norm = math.sqrt(math.fsum(value * value for value in vector))
    if norm == 0.0:
        raise EmbedderUnavailable("The embedding endpoint answered an all-zero vector.")
    return [value / norm for value in vector]


def _without_credentials(url: str) -> str:
    """The URL for messages: no user:password@ and no query string, where keys sometimes hide."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))

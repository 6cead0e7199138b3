"""Resolvers for coord_reconcile (seeds/004): is a claim about a repository still true?

A claim qualifies when its `meta` names a `repo` ("owner/name") and a `pr` (number) or a `branch` (with an
optional `sha`). The meta is its provenance: the claim describes work that a PR or a branch carries.
- a merged PR: `current`; a PR closed without merging: `stale` (the change never landed); an open PR:
  `unverifiable` (not landed yet, and nothing says the claim is wrong);
- a branch that exists: `current`, unless `meta.sha` is given and the head moved on (`stale`); a branch gone
  from a repository we can read: `stale`.
Anything we cannot see (no token, a network error, rate limits, a private repository, an unexpected answer)
is `unverifiable`, never a guess.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import quote

from django.conf import settings

from memory.models import Claim

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("memory.resolvers")

VerdictName = Literal["current", "stale", "unverifiable"]
REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SHA = re.compile(r"^[0-9a-f]{7,40}$")
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Verdict:
    verdict: VerdictName
    detail: str


class Resolver(Protocol):
    name: str

    def resolve(self, claim: Claim) -> Verdict:
        """The verdict on one claim. Must not raise: what cannot be checked is `unverifiable`."""
        ...


@dataclass(frozen=True)
class RepoRef:
    """What a claim's meta points at in a repository."""

    repo: str
    pr: int | None
    branch: str
    sha: str

    @classmethod
    def from_meta(cls, meta: Any) -> RepoRef | None:
        """The reference, or None when the meta names no repo with a PR or branch."""
        if not isinstance(meta, dict) or not meta.get("repo") or not (meta.get("pr") or meta.get("branch")):
            return None
        pr = str(meta.get("pr") or "").lstrip("#").strip()
        return cls(
            repo=str(meta["repo"]).strip(),
            pr=int(pr) if pr.isdigit() else None,
            branch=str(meta.get("branch") or "").strip(),
            sha=str(meta.get("sha") or "").strip().lower(),
        )

    @property
    def problem(self) -> str:
        """Why this reference cannot be checked at all, or ''."""
        if not REPO.match(self.repo):
            return "meta.repo is not 'owner/name'."
        if self.pr is None and not self.branch:
            return "meta.pr is not a pull request number."
        if self.sha and not SHA.match(self.sha):
            return "meta.sha is not a commit sha (7 to 40 hex digits)."
        return ""


class UnverifiableResolver:
    """Used when no GitHub token is configured: nothing can be checked, so nothing is claimed."""

    name = "none"

    def resolve(self, claim: Claim) -> Verdict:
        return Verdict("unverifiable", "No GitHub access is configured (GITHUB_TOKEN).")


class GitHubResolver:
    """Checks PRs and branches through the GitHub REST API with a read-only token."""

    name = "github"

    def __init__(self, token: str, base_url: str, *, timeout_s: float = TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "memory-service-reconcile",
        }

    def resolve(self, claim: Claim) -> Verdict:
        ref = RepoRef.from_meta(claim.meta)
        if ref is None:
            return Verdict("unverifiable", "The claim names no repo with a PR or branch in its meta.")
        if ref.problem:
            return Verdict("unverifiable", ref.problem)
        import httpx  # here, not at the top: the web and worker processes never resolve, and httpx is ~17 MB

        try:
            with httpx.Client(
                base_url=self.base_url, headers=self.headers, timeout=self.timeout_s, follow_redirects=True
            ) as client:
                return self._pull(client, ref) if ref.pr is not None else self._branch(client, ref)
        except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning("reconcile.github_unavailable", extra={"claimId": claim.pk, "error": type(exc).__name__})
            return Verdict("unverifiable", "GitHub could not be reached or answered unexpectedly.")

    def _pull(self, client: httpx.Client, ref: RepoRef) -> Verdict:
        response = client.get(f"/repos/{ref.repo}/pulls/{ref.pr}")
        if response.status_code != 200:
            return _unreadable(response, f"pull request #{ref.pr} of {ref.repo}")
        pull = response.json()
        if pull.get("merged") is True or pull.get("merged_at"):
            return Verdict("current", f"Pull request #{ref.pr} of {ref.repo} was merged at {pull.get('merged_at')}.")
        if pull["state"] == "closed":
            return Verdict("stale", f"Pull request #{ref.pr} of {ref.repo} was closed without being merged.")
        return Verdict("unverifiable", f"Pull request #{ref.pr} of {ref.repo} is still open.")

    def _branch(self, client: httpx.Client, ref: RepoRef) -> Verdict:
        response = client.get(f"/repos/{ref.repo}/branches/{quote(ref.branch, safe='/')}")
        if response.status_code == 404:
            # GitHub also answers 404 for a repository the token cannot read: only a readable repository
            # without the branch makes the claim stale.
            if client.get(f"/repos/{ref.repo}").status_code == 200:
                return Verdict("stale", f"Branch {ref.branch} no longer exists in {ref.repo}.")
            return _unreadable(response, f"branch {ref.branch} of {ref.repo}")
        if response.status_code != 200:
            return _unreadable(response, f"branch {ref.branch} of {ref.repo}")
        head = str(response.json()["commit"]["sha"]).lower()
        if ref.sha and not head.startswith(ref.sha):
            return Verdict("stale", f"Branch {ref.branch} of {ref.repo} moved on: its head is {head[:12]}.")
        return Verdict("current", f"Branch {ref.branch} of {ref.repo} is at {head[:12]}.")


def _unreadable(response: httpx.Response, what: str) -> Verdict:
    return Verdict("unverifiable", f"GitHub answered {response.status_code} for {what}.")


def configured_resolver() -> Resolver:
    """The GitHub resolver when a token is configured, else the one that never claims anything."""
    if settings.GITHUB_TOKEN:
        return GitHubResolver(settings.GITHUB_TOKEN, settings.GITHUB_API_URL)
    return UnverifiableResolver()

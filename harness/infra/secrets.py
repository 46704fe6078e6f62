"""One masking rule for everything the harness writes or prints (stdout, job.json, Hydra's .hydra/*.yaml,
config.yaml, MLflow params, tags, run and experiment names). Imports nothing from harness.

Masked: the value of every key named like a credential (`tracking.token`, `api_key`, `db.password`), the
value of every environment variable named like one wherever it appears (so `${oc.env:HF_TOKEN}` resolved
into an innocent key is masked too), and the password of a URI (`http://user:***@host`)."""
from __future__ import annotations

import logging
import os
import re
from typing import Any, Iterable, List
from urllib.parse import urlsplit, urlunsplit

# Matched against each dotted part of a name: `HF_TOKEN`, `api_token`, `aws.secret_access_key`,
# `MLFLOW_TRACKING_PASSWORD` are secret; `max_new_tokens`, `tokenizer`, `pad_token_id`, `topk` are not.
SECRET_PART = re.compile(r"PASSWORD|PASSWD|PASSPHRASE|SECRET|CREDENTIAL|AUTH(?!OR(?!IZ))"
                         r"|(API|ACCESS|PRIVATE)[-_]?KEY|TOKEN$|(^|[-_])KEY$", re.IGNORECASE)
MASK = "***"
MIN_SECRET_LENGTH = 6  # shorter env values ("1", "true") would mask innocent text
# `scheme://user:password@`, also as Hydra prints overrides (`http\://user\:password@`)
URI_WITH_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*\\?://[^/\s:@\\]*\\?:)(?P<password>[^/\s@]+)@")


def looks_secret(name: str) -> bool:
    return any(SECRET_PART.search(part) for part in str(name).split("."))


def secret_env_values() -> List[str]:
    """Values of credential-named environment variables, longest first (so overlaps mask fully)."""
    values = {v for k, v in os.environ.items() if looks_secret(k) and len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def mask_uri_passwords(text: str) -> str:
    """Every `scheme://user:password@` in `text` with the password masked (URIs inside longer text too)."""
    if "://" not in text or "@" not in text:
        return text
    masked = URI_WITH_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", text)
    if masked != text:
        return masked
    try:  # a password with characters the pattern does not take, in a plain URI
        parts = urlsplit(text)
        if parts.password is None:
            return text
        return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", f":{MASK}@", 1)))
    except ValueError:
        return text


def has_uri_password(text: str) -> bool:
    return mask_uri_passwords(text) != text


def scrub(text: str) -> str:
    """`text` with secret env values and URI passwords masked."""
    for value in secret_env_values():
        text = text.replace(value, MASK)
    return mask_uri_passwords(text)


def mask_override(override: str) -> str:
    """`+x.api_token=abc` -> `+x.api_token=***`; any other text only scrubbed."""
    key, sep, _ = override.partition("=")
    return f"{key}{sep}{MASK}" if sep and looks_secret(key.strip().lstrip("+~")) else scrub(override)


def mask_overrides(overrides: Iterable[str]) -> List[str]:
    return [mask_override(o) for o in overrides]


def safe_run_name(name: str) -> str:
    """A run name built from `k=v,k=v` overrides, with credential-named values masked."""
    return ",".join(mask_overrides(name.split(",")))


def mask_tree(node: Any, name: str = "") -> Any:
    """Plain containers (a loaded YAML or JSON) with the values of credential-named keys masked and every
    string masked as an override list (`k=v,k=v`): Hydra's files hold the overrides in both forms."""
    if isinstance(node, dict):
        return {k: mask_tree(v, str(k)) for k, v in node.items()}
    if isinstance(node, list):
        return [mask_tree(v, name) for v in node]
    if looks_secret(name) and node is not None:
        return MASK
    return safe_run_name(node) if isinstance(node, str) else node


def mask_log_records() -> None:
    """Mask every log record of this process from now on (Hydra's own "#0 : overrides" lines included),
    whatever handlers or formats later logging configurations install. Idempotent."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, "masks_secrets", False):
        return

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # inside every logging call: a record that fails to format is logging's to report
            return record
        masked = " ".join(safe_run_name(word) if "=" in word else word for word in scrub(message).split(" "))
        if masked != message:
            record.msg, record.args = masked, None
        return record

    factory.masks_secrets = True
    logging.setLogRecordFactory(factory)

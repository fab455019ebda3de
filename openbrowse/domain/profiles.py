"""Profile vocabulary (spec §4.9, §5.3): the stored record and the id rule for imported profiles."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime

from openbrowse.domain.ids import ProfileId

_IMPORTED_ID = re.compile(r"^[A-Za-z0-9._-]+$")
ID_LIMIT = 200


def new_profile_id() -> ProfileId:
    return ProfileId(str(uuid.uuid4()))


def is_valid_profile_id(value: str) -> bool:
    """Ids an import may carry (spec §2.2): letters, digits, ``.``, ``_``, ``-``, never ``..``; safe as a file name."""
    return bool(_IMPORTED_ID.match(value)) and ".." not in value and len(value) <= ID_LIMIT and value != "."


@dataclass(frozen=True, slots=True)
class ProfileRecord:
    id: ProfileId
    name: str | None
    user_id: str | None
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = None
    cookie_domains: tuple[str, ...] | None = None

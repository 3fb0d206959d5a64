"""The write log of the lakeFS backend: one object per write transaction, in slots that two
servers cannot both take.

A write transaction on branch B uploads one object holding all of its changes, at the next
free *slot* of B's log directory: ``_hms_log/B/<seq>`` (12 digits), with ``If-None-Match: *``
so that lakeFS stores it only if nobody took that slot first. lakeFS stores an upload whole or
not at all, so a transaction is visible whole or not at all, whatever happens to the server
that wrote it; and a writer that lost its slot to another server learns it (lakeFS's 412),
reads what that server wrote and decides again (the store's ``WriteConflict``): writes of one
branch are totally ordered, whichever server makes them. The writer's clock (nanoseconds) is
in the object's user metadata (``hms-t``), never earlier than the entry before it.

What a ref reads as is a function of its objects alone, whatever branch wrote them or moved
them there (a lakeFS commit, branch, merge, revert or cherry-pick made by ``lakectl`` or the
UI included): the per-key objects ``_hms/<key>``, overlaid with every live entry of every
directory under ``_hms_log/``, in the order of their times (then directory, then slot).

A *fold* (``hms-proxy commit``, or lakeFS's ``prepare-commit`` hook) writes the net changes
as per-key objects, then takes the next slot itself with a *fold entry* that records the
*floor*: every entry of that directory at or below it is folded (its changes are in the
per-key objects), so readers skip it. Entries of other directories and of the layout before
slots that it folded are named in the fold entry. Folded slots of the last ``RETAIN`` seconds
stay occupied (their objects are kept, skipped by readers) so that a writer that has not yet
seen the fold cannot take a slot it did not know was used; older ones are deleted by later
folds.

The layout before slots (entries named ``<nanoseconds>-<random>``, markers ``~folded-...``
naming entries of their directory) is still read, and folded like any other entry.
"""
from __future__ import annotations

import json
import re
import struct
import time
import uuid
from dataclasses import dataclass, field

from kvmodel.store.errors import StoreError

LOG = "_hms_log/"  # LOG + directory + "/" + slot
SEQ_WIDTH = 12
META_TIME = "hms-t"  # the writer's time in nanoseconds, in an entry's user metadata
META_KIND = "hms-kind"  # "fold" on a fold entry's user metadata
META_FLOOR = "hms-floor"  # a fold entry's floor, in its user metadata (as in its content)
META_NAMED = "hms-named"  # how many entries it names: its content is read only if any
META_NONCE = "hms-n"  # an entry's own random name, in its user metadata
META_PRED = "hms-p"  # the nonce of the entry it was decided over (the slot chain, below)
META_WRITER = "hms-w"  # the server that uploaded it: id@host:port (kvmodel.store.lakefs.peers)
RETAIN = 120.0  # seconds a folded slot stays occupied (a writer's state is never half as old)
MARKER = "~folded-"  # the layout before slots: a marker naming folded entries of its directory
_MAGIC = b"HMSLOG1\n"  # the layout before slots: magic, then the changes
_MAGIC2 = b"HMSLOG2\n"  # magic, 16 random bytes (no two entries alike), then the changes
_NONCE = 16
_FOLD_MAGIC = b"HMSFOLD2\n"
_MARKER_MAGIC = b"HMSFOLD1\n"
_LEN = struct.Struct(">I")
_VAL = struct.Struct(">i")
_SEQ = re.compile(r"\d{%d}" % SEQ_WIDTH)
_LEGACY = re.compile(r"\d{20}-[0-9a-f]+")


def directory(branch: str) -> str:
    """The object prefix of ``branch``'s log directory."""
    return f"{LOG}{branch}/"


def slot_path(branch: str, seq: int) -> str:
    return f"{LOG}{branch}/{seq:0{SEQ_WIDTH}d}"


def new_entry_name() -> str:
    """A name of the layout before slots (kept for reading and tests of it)."""
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:16]}"


def is_marker(name: str) -> bool:
    return name.startswith(MARKER)


# --- entries ---------------------------------------------------------------------------------
def encode(changes: dict[str, bytes | None]) -> bytes:
    """One entry's bytes: every key with its value, or a deletion; never the same bytes as
    another entry's (two servers writing the same change each know their own)."""
    out = [_MAGIC2, uuid.uuid4().bytes]
    for key in sorted(changes):
        raw = key.encode("utf-8")
        value = changes[key]
        out.append(_LEN.pack(len(raw)))
        out.append(raw)
        if value is None:
            out.append(_VAL.pack(-1))
        else:
            out.append(_VAL.pack(len(value)))
            out.append(value)
    return b"".join(out)


def decode(data: bytes, name: str = "") -> dict[str, bytes | None]:
    """The changes of an entry; StoreError when the bytes are not one (never a partial dict)."""
    view = memoryview(data)
    if bytes(view[:len(_MAGIC2)]) == _MAGIC2:
        pos = len(_MAGIC2) + _NONCE
    elif bytes(view[:len(_MAGIC)]) == _MAGIC:
        pos = len(_MAGIC)
    else:
        raise StoreError(f"log entry {name!r} is not a write-log entry of this store")
    changes: dict[str, bytes | None] = {}
    end = len(data)
    try:
        while pos < end:
            (klen,) = _LEN.unpack_from(view, pos)
            pos += 4
            key = bytes(view[pos:pos + klen]).decode("utf-8")
            if pos + klen > end:
                raise ValueError("truncated key")
            pos += klen
            (vlen,) = _VAL.unpack_from(view, pos)
            pos += 4
            if vlen < 0:
                changes[key] = None
                continue
            if pos + vlen > end:
                raise ValueError("truncated value")
            changes[key] = bytes(view[pos:pos + vlen])
            pos += vlen
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise StoreError(f"log entry {name!r} is damaged: {exc}") from None
    return changes


# --- fold entries ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Fold:
    """What a fold entry (or a marker of the layout before slots) says: its directory's slots
    up to ``floor`` are folded, and so are the entries ``named`` (paths)."""

    floor: int = 0
    named: frozenset = frozenset()


def encode_fold(floor: int, named: list[str]) -> bytes:
    return _FOLD_MAGIC + json.dumps({"floor": floor, "named": sorted(named)}).encode("utf-8")


def decode_fold(data: bytes, path: str) -> Fold:
    """A fold entry of this layout or a marker of the one before (its names are relative to
    its directory); StoreError when it is neither."""
    if data.startswith(_FOLD_MAGIC):
        try:
            record = json.loads(data[len(_FOLD_MAGIC):].decode("utf-8"))
            return Fold(int(record["floor"]), frozenset(str(n) for n in record["named"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"fold entry {path!r} is damaged: {exc}") from None
    if data.startswith(_MARKER_MAGIC):
        prefix = path.rsplit("/", 1)[0] + "/"
        text = data[len(_MARKER_MAGIC):].decode("utf-8", "replace")
        return Fold(0, frozenset(prefix + n for n in text.split("\n") if n))
    raise StoreError(f"fold entry {path!r} is not one of this store")


# --- a log as listed -------------------------------------------------------------------------
@dataclass(frozen=True)
class Listed:
    """One object under ``_hms_log/``: its path, directory, slot (None for the layout before
    slots), writer's time, lakeFS's checksum and modification time (lakeFS's clock, seconds)."""

    path: str
    directory: str
    seq: int | None
    time: int
    checksum: str
    mtime: int = 0
    fold: bool = False  # a fold entry (or a marker of the layout before slots)
    floor: int = 0  # a fold entry's floor, from its metadata
    named: int = -1  # how many entries a fold entry names (-1: unknown, read its content)
    nonce: str = ""  # its own nonce ("": written before the slot chain)
    pred: str | None = None  # the nonce of the entry before it in the chain (None: no claim)
    writer: str = ""  # the server that uploaded it ("": not said)

    @property
    def needs_reading(self) -> bool:
        """Whether a fold entry's content says more than its metadata."""
        return self.fold and self.named != 0

    @property
    def cache_key(self) -> tuple:
        return (self.path, self.checksum)


def listed(path: str, metadata: dict | None, checksum: str, mtime: int = 0) -> Listed | None:
    """The log object at ``path`` (None for something else found under the prefix)."""
    rest = path[len(LOG):] if path.startswith(LOG) else None
    if not rest or "/" not in rest:
        return None
    dirname, name = rest.rsplit("/", 1)
    stamp, fold, floor, named, nonce, pred, writer = 0, False, 0, -1, "", None, ""
    for key, value in (metadata or {}).items():
        key = key.lower()
        if key == META_KIND:
            fold = value == "fold"
            continue
        if key == META_NONCE:
            nonce = value
            continue
        if key == META_PRED:
            pred = value
            continue
        if key == META_WRITER:
            writer = value
            continue
        try:
            number = int(value)
        except ValueError:
            continue
        if key == META_TIME:
            stamp = number
        elif key == META_FLOOR:
            floor = number
        elif key == META_NAMED:
            named = number
    if _SEQ.fullmatch(name):
        return Listed(path, dirname, int(name), stamp, checksum or "", mtime, fold,
                      floor if fold else 0, named if fold else -1, nonce, pred, writer)
    if _LEGACY.fullmatch(name):
        return Listed(path, dirname, None, int(name.split("-", 1)[0]), checksum or "", mtime)
    if is_marker(name):
        return Listed(path, dirname, None, 0, checksum or "", mtime, True)
    return None


@dataclass
class Plan:
    """What a listed log means: the entries to apply, in order; what folds made of the rest;
    and, per directory, the end of its slot chain (the last slot in it, its nonce, the first
    free slot after it: where the next write goes) and the last writer's time."""

    live: list = field(default_factory=list)  # Listed entries, in the order they apply
    folded: list = field(default_factory=list)  # Listed entries folded (kept or named)
    folds: list = field(default_factory=list)  # Listed fold entries and markers
    floors: dict = field(default_factory=dict)  # directory -> floor
    last_seq: dict = field(default_factory=dict)  # directory -> the last slot of its chain
    last_nonce: dict = field(default_factory=dict)  # directory -> that slot's nonce
    next_slot: dict = field(default_factory=dict)  # directory -> the first free slot after
    last_time: dict = field(default_factory=dict)  # directory -> latest writer's time
    unsettled: list = field(default_factory=list)  # entries after a gap of their chain


def _chain(slots: list[Listed]) -> tuple[set, set, int, str]:
    """One directory's slot objects (sorted by slot): (the cache keys of the slots in its
    chain, of those after its end that may still join it, the chain's last slot and nonce).

    A writer that has groups in flight decides each over the ones before it, so an entry
    names the nonce of the one it was decided over (``pred``): it counts only once that one
    is in the chain. The chain starts at the directory's newest fold entry (written in the
    first free slot after the chain as its writer saw it, so it is in it), else at slot 0; an
    entry without ``pred`` (written before the chain, or after an entry without a nonce)
    joins it wherever it is. An entry whose predecessor is not there yet may still join (its
    writer's upload of it is in flight, into a free slot before it): it is *unsettled*; when
    no slot between the chain's end and it is free, it never will (another entry took its
    predecessor's place)."""
    folds = [o for o in slots if o.fold]
    start = folds[-1] if folds else None
    tip_seq, tip_nonce = (start.seq, start.nonce) if start else (0, None)
    on = follow(slots, tip_seq, tip_nonce)
    chain = {o.cache_key for o in on.chained} | ({start.cache_key} if start else set())
    return (chain, {o.cache_key for o in on.others if o.seq > on.gap}, on.tip_seq,
            on.tip_nonce or "")


@dataclass
class Followed:
    """What :func:`follow` found after a chain's end."""
    chained: list  # the entries that continue the chain, in slot order
    others: list  # the entries after its end not in it (voided, or unsettled)
    tip_seq: int  # its last slot now
    tip_nonce: str | None  # and that entry's nonce
    gap: int  # the first free slot after it: where the next write goes


def follow(slots: list[Listed], tip_seq: int, tip_nonce: str | None) -> Followed:
    """The chain that ends at slot ``tip_seq`` (its entry's nonce ``tip_nonce``, None for
    none) carried on through ``slots`` (one directory's, sorted by slot; those up to
    ``tip_seq`` are passed over), as every reader reads it (:func:`_chain`): an entry joins
    when it names the chain's last entry, or names none."""
    chained, others = [], []
    for obj in slots:
        if obj.seq <= tip_seq:
            continue
        if obj.pred is None or (tip_nonce is not None and obj.pred == tip_nonce):
            chained.append(obj)
            tip_seq, tip_nonce = obj.seq, obj.nonce or None
        else:
            others.append(obj)
    taken = {o.seq for o in slots}
    gap = tip_seq + 1
    while gap in taken:
        gap += 1
    return Followed(chained, others, tip_seq, tip_nonce, gap)


def plan(objects: list[Listed], folds: dict) -> Plan:
    """The plan of a log: ``objects`` as listed; ``folds`` maps the ``cache_key`` of each
    fold entry among them whose content says more than its metadata
    (``Listed.needs_reading``) to its :class:`Fold`, as the caller read it."""
    out = Plan()
    named: set = set()
    by_dir: dict[str, list] = {}
    for obj in objects:
        if obj.seq is not None:
            by_dir.setdefault(obj.directory, []).append(obj)
            out.last_time[obj.directory] = max(out.last_time.get(obj.directory, 0), obj.time)
        if not obj.fold:
            continue
        fold = folds[obj.cache_key] if obj.needs_reading else Fold(obj.floor)
        out.folds.append(obj)
        named |= fold.named
        if obj.seq is not None:
            out.floors[obj.directory] = max(out.floors.get(obj.directory, 0), fold.floor)
    chained: set = set()
    waiting: set = set()
    for directory, slots in by_dir.items():
        slots.sort(key=lambda o: o.seq)
        chain, after, tip, nonce = _chain(slots)
        chained |= chain
        waiting |= after
        out.last_seq[directory], out.last_nonce[directory] = tip, nonce
        taken = {o.seq for o in slots}
        free = tip + 1
        while free in taken:
            free += 1
        out.next_slot[directory] = free
    for obj in (o for o in objects if not o.fold):
        if obj.path in named or (obj.seq is not None and
                                 obj.seq <= out.floors.get(obj.directory, 0)):
            out.folded.append(obj)
        elif obj.seq is not None and obj.cache_key in waiting:
            out.unsettled.append(obj)
        elif obj.seq is not None and obj.cache_key not in chained:
            out.folded.append(obj)  # out of the chain for good: never applied
        else:
            out.live.append(obj)
    out.live.sort(key=order)
    return out


def order(obj: Listed) -> tuple:
    """The order entries apply in: the layout before slots first, by name (it ordered so); then
    by writer's time, directory and slot (a writer's time is never before the slot before)."""
    return (obj.seq is not None, obj.time, obj.directory, obj.seq or 0, obj.path)


__all__ = ["LOG", "META_TIME", "META_KIND", "META_NONCE", "META_PRED", "META_WRITER", "RETAIN", "directory", "slot_path", "encode", "decode",
           "Fold", "encode_fold", "decode_fold", "Listed", "listed", "Plan", "plan", "order"]

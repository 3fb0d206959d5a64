"""A weighted LRU cache, shared by the store (decoded ranges) and the catalog (derived reads)."""
from __future__ import annotations

import threading
from collections import OrderedDict


class LRUCache:
    """A thread-safe LRU of immutable decoded objects, bounded by total weight (bytes)."""

    def __init__(self, max_weight: int):
        self.max_weight = max_weight
        self._items: OrderedDict[bytes, tuple[object, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key):
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self.hits += 1
            self._items.move_to_end(key)
            return item[0]

    def stats(self) -> dict[str, int]:
        """hits, misses, bytes (the entries' weight), capacity and entries."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "bytes": self._weight,
                    "capacity": self.max_weight, "entries": len(self._items)}

    def put(self, key, value, weight: int) -> None:
        if weight > self.max_weight:
            return  # larger than the whole cache (or the cache is disabled)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._weight -= old[1]
            self._items[key] = (value, weight)
            self._weight += weight
            while self._weight > self.max_weight and len(self._items) > 1:
                _, (_, w) = self._items.popitem(last=False)
                self._weight -= w

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0

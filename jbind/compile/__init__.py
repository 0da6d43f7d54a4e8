"""Compile cache: `stats()`, `misses()`, `count_compiles()`, persistent cache control."""
from .cache import (CACHE, CacheKey, CompileCache, clear, count_compiles, estimate_bytes, misses, set_max_bytes,
                    set_max_entries, stats)
from .persistent import (PersistentCacheWarning, disable_persistent_cache, enable_from_env, enable_persistent_cache,
                         persistent_cache_dir)

__all__ = ["CACHE", "CacheKey", "CompileCache", "clear", "count_compiles", "misses", "set_max_entries",
           "set_max_bytes", "estimate_bytes", "stats", "enable_persistent_cache", "disable_persistent_cache", "persistent_cache_dir",
           "enable_from_env", "PersistentCacheWarning"]

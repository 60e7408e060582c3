"""SQL skeletons (the function lives in :mod:`indices.experience_skeleton`; indices must not
import bench)."""

from indices.experience_skeleton import sql_skeleton

__all__ = ["sql_skeleton"]

"""One table: the factor space, the neighbour search, the avatar method and the de-associative methods."""

from relanon.engine.avatar import AvatarResult, avatarize
from relanon.engine.deassociate import anatomize, bucketize
from relanon.engine.factor_space import FactorSpace

__all__ = ["AvatarResult", "FactorSpace", "anatomize", "avatarize", "bucketize"]

"""The MOT trackers' per-track table: one row per live track, one typed numpy column each.

sleap-nn keeps a ``Track`` object per track; :class:`~sleap_infer.tracking.mot.core.MotCore`
keeps columns instead, so that a frame's prediction, aging and pruning are array
operations and its state journals as plain arrays named after the columns.

Each column is a dataclass field declared with :func:`column` (the dtype, the shape of
one track's entry, the fill of a new track), so the type checker sees every column and
:class:`Columns` appends, selects, saves and loads them all from the declarations
alone, with no list of names kept apart from them. A tracker with its own per-track
memory (OC-SORT's observations, ByteTrack's latest pose) declares it as a subclass of
:class:`TrackTable`; :class:`TrackColumn` lets the tracker read and write a column as
its own attribute (``self.tsu`` is ``self.tracks.tsu``), the way the trackers' code,
after sleap-nn's, reads its tracks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import Any, ClassVar, Generic, Protocol, TypeVar, overload

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

C = TypeVar("C", bound="Columns")
A = TypeVar("A", bound=np.ndarray)

# A dimension of a column's entry: a size, or a name sized by ``Columns.empty``.
Dim = int | str


def column(*shape: Dim, dtype: type[np.generic] = np.float64, fill: float | None = None) -> Any:
    """Declare a column of a :class:`Columns` dataclass.

    ``shape``: one track's entry (``()``: a scalar; a name: a size the tracker gives
    :meth:`Columns.empty`, such as its Kalman dimension); ``fill``: the entry of a row
    appended without a value (None: :meth:`Columns.append` must be given one). Typed
    ``Any``, as :func:`dataclasses.field` is, so the annotation states the column's type.
    """
    return field(metadata={"shape": shape, "dtype": dtype, "fill": fill})


@dataclass
class Columns:
    """Equal-length numpy columns, one row per item, declared with :func:`column`.

    Saved as the arrays ``prefix + name``, in declaration order (a subclass's after its
    base's), each in its declared dtype.
    """

    prefix: ClassVar[str] = ""

    @classmethod
    def empty(cls: type[C], **dims: int) -> C:
        """No rows; ``dims`` sizes the named dimensions of the columns' entries."""
        made: dict[str, np.ndarray] = {}
        for f in fields(cls):
            shape = tuple(dims[d] if isinstance(d, str) else d for d in f.metadata["shape"])
            made[f.name] = np.zeros((0, *shape), f.metadata["dtype"])
        return cls(**made)

    def _columns(self) -> Iterator[tuple[Field[Any], np.ndarray]]:
        for f in fields(self):
            yield f, getattr(self, f.name)

    def __len__(self) -> int:
        return len(getattr(self, fields(self)[0].name))

    def append(self, **values: npt.ArrayLike) -> None:
        """Add one row at the end: ``values`` by column name, the other columns their fill."""
        unknown = set(values) - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"{type(self).__name__} has no column {sorted(unknown)}")
        for f, col in self._columns():
            value = values[f.name] if f.name in values else f.metadata["fill"]
            if value is None:
                raise TypeError(f"a new {type(self).__name__} row needs its {f.name}")
            row = np.full((1, *col.shape[1:]), value, col.dtype)
            setattr(self, f.name, np.concatenate([col, row]))

    def keep(self, mask: BoolArray) -> None:
        """Keep the rows where ``mask`` is true, in order."""
        for f, col in self._columns():
            setattr(self, f.name, col[mask])

    def arrays(self) -> dict[str, np.ndarray]:
        """Copies of the columns, named for the tracker state."""
        return {self.prefix + f.name: col.copy() for f, col in self._columns()}

    def load(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the rows by those :meth:`arrays` saved, in this table's dtypes and the
        entry shapes it was made with."""
        for f, col in self._columns():
            saved = np.array(arrays[self.prefix + f.name], col.dtype)
            setattr(self, f.name, saved.reshape(-1, *col.shape[1:]))


@dataclass
class TrackTable(Columns):
    """What every MOT tracker remembers per track; ``empty(d=...)`` sizes the filter."""

    mean: FloatArray = column("d")  # Kalman state
    cov: FloatArray = column("d", "d")
    tid: IntArray = column(dtype=np.int64)  # internal id, in spawn order
    public_id: IntArray = column(dtype=np.int64)  # answered id (-1: not confirmed yet)
    status: IntArray = column(dtype=np.int64)  # TENTATIVE, CONFIRMED or LOST
    hits: IntArray = column(dtype=np.int64)  # matches (from the tracker's hits_start)
    hit_streak: IntArray = column(dtype=np.int64)  # ... without a miss in between
    age: IntArray = column(dtype=np.int64)  # steps since the spawn
    tsu: IntArray = column(dtype=np.int64)  # steps since the latest update
    seen_step: IntArray = column(dtype=np.int64)  # step of the latest match (or spawn)


@dataclass
class Members(Columns):
    """The tentative tracks' detections, answered as late labels if their track confirms."""

    prefix = "member_"

    tid: IntArray = column(dtype=np.int64)  # the track's internal id
    frame: IntArray = column(dtype=np.int64)
    det: IntArray = column(dtype=np.int64)  # the detection's row in its frame
    score: FloatArray = column()  # its label score (spawn: 1.0; a match: the similarity)


class HasTracks(Protocol):
    """A tracker holding its per-track table as ``tracks``."""

    @property
    def tracks(self) -> TrackTable: ...


class TrackColumn(Generic[A]):
    """A column of the tracker's ``tracks`` table, read and written as the tracker's own
    attribute of the same name: ``tsu = TrackColumn[IntArray]()`` in the tracker's class
    makes ``self.tsu`` the table's ``tsu``, with its type."""

    name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, tracker: None, owner: type) -> TrackColumn[A]: ...

    @overload
    def __get__(self, tracker: HasTracks, owner: type) -> A: ...

    def __get__(self, tracker: HasTracks | None, owner: type) -> TrackColumn[A] | A:
        if tracker is None:
            return self
        value: A = getattr(tracker.tracks, self.name)
        return value

    def __set__(self, tracker: HasTracks, value: A) -> None:
        setattr(tracker.tracks, self.name, value)

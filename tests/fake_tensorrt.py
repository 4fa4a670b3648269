"""A stand-in for the ``tensorrt`` module: enough API to test our build and run logic on a CPU.

It records what our code asks of TensorRT (profile shapes, flags, workspace)
and "executes" an engine by filling outputs with a function of the input.
"""

from __future__ import annotations

import ctypes
import enum
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch

__version__ = "10.99.0"


class DataType(enum.Enum):
    FLOAT = 0
    HALF = 1
    INT8 = 2
    INT32 = 3
    BOOL = 4
    UINT8 = 5
    INT64 = 6


class TensorIOMode(enum.Enum):
    INPUT = 1
    OUTPUT = 2


class BuilderFlag(enum.Enum):
    FP16 = 0
    TF32 = 1


class MemoryPoolType(enum.Enum):
    WORKSPACE = 0


class Logger:
    WARNING = 2
    INFO = 3

    def __init__(self, level: int) -> None:
        self.level = level


RECORD: dict[str, Any] = {}
PARSE_OK = [True]


class _Network:
    pass


class OnnxParser:
    num_errors = 1

    def __init__(self, network: _Network, logger: Logger) -> None:
        pass

    def parse(self, data: bytes) -> bool:
        RECORD["parsed_bytes"] = len(data)
        return PARSE_OK[0]

    def get_error(self, i: int) -> str:
        return "Unsupported operator TopK on this version"


class _Profile:
    def set_shape(self, name: str, low: tuple, opt: tuple, high: tuple) -> None:
        RECORD["profile"] = (name, low, opt, high)


class _Config:
    def __init__(self) -> None:
        self.flags = {BuilderFlag.TF32}

    def set_memory_pool_limit(self, pool: MemoryPoolType, size: int) -> None:
        RECORD["workspace"] = size

    def set_flag(self, flag: BuilderFlag) -> None:
        self.flags.add(flag)

    def clear_flag(self, flag: BuilderFlag) -> None:
        self.flags.discard(flag)

    def add_optimization_profile(self, profile: _Profile) -> None:
        RECORD["profiles"] = RECORD.get("profiles", 0) + 1


class Builder:
    def __init__(self, logger: Logger) -> None:
        pass

    def create_network(self, flags: int) -> _Network:
        RECORD["network_flags"] = flags
        return _Network()

    def create_builder_config(self) -> _Config:
        config = _Config()
        RECORD["config"] = config
        return config

    def create_optimization_profile(self) -> _Profile:
        return _Profile()

    def build_serialized_network(self, network: _Network, config: _Config) -> bytes:
        return b"fake-engine"


class FakeEngine:
    """An engine with one uint8/float input and outputs computed by ``run``."""

    def __init__(
        self,
        inputs: dict[str, DataType],
        outputs: dict[str, tuple[DataType, Callable[[torch.Tensor], torch.Tensor]]],
    ) -> None:
        self.io = {**{k: (TensorIOMode.INPUT, v) for k, v in inputs.items()}}
        self.io.update({k: (TensorIOMode.OUTPUT, v[0]) for k, v in outputs.items()})
        self.outputs = outputs
        self.num_io_tensors = len(self.io)
        self.contexts: list[FakeContext] = []

    def get_tensor_name(self, i: int) -> str:
        return list(self.io)[i]

    def get_tensor_mode(self, name: str) -> TensorIOMode:
        return self.io[name][0]

    def get_tensor_dtype(self, name: str) -> DataType:
        return self.io[name][1]

    def create_execution_context(self) -> FakeContext:
        context = FakeContext(self)
        self.contexts.append(context)
        return context


class FakeContext:
    def __init__(self, engine: FakeEngine) -> None:
        self.engine = engine
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.addresses: dict[str, int] = {}
        self.max_batch = 8
        self.seen: list[torch.Tensor] = []

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> bool:
        if shape[0] > self.max_batch:
            return False
        self.shapes[name] = shape
        return True

    def get_tensor_shape(self, name: str) -> tuple[int, ...]:
        """Output shapes follow from running the output function on zeros of the input shape."""
        source = _input(self.engine)
        dtype = _TORCH[self.engine.get_tensor_dtype(source)]
        return tuple(
            self.engine.outputs[name][1](torch.zeros(self.shapes[source], dtype=dtype)).shape
        )

    def set_tensor_address(self, name: str, ptr: int) -> None:
        self.addresses[name] = ptr

    def execute_async_v3(self, stream: int) -> bool:
        """Read the input and write the outputs through their raw addresses, like a GPU would."""
        name = _input(self.engine)
        dtype = _TORCH[self.engine.get_tensor_dtype(name)]
        x = _at(self.addresses[name], self.shapes[name], dtype).clone()
        self.seen.append(x)
        for out_name, (out_type, fn) in self.engine.outputs.items():
            value = fn(x).to(_TORCH[out_type]).contiguous()
            ctypes.memmove(
                self.addresses[out_name], value.data_ptr(), value.numel() * value.element_size()
            )
        return True


_TORCH = {
    DataType.FLOAT: torch.float32,
    DataType.HALF: torch.float16,
    DataType.UINT8: torch.uint8,
    DataType.BOOL: torch.bool,
    DataType.INT32: torch.int32,
}


def _at(address: int, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A tensor viewing ``shape`` elements of ``dtype`` at a raw CPU address."""
    size = torch.empty((), dtype=dtype).element_size()
    count = 1
    for d in shape:
        count *= d
    buffer = (ctypes.c_uint8 * (count * size)).from_address(address)
    return torch.frombuffer(bytearray(buffer), dtype=dtype).reshape(shape)


def _input(engine: FakeEngine) -> str:
    return next(k for k, (mode, _) in engine.io.items() if mode == TensorIOMode.INPUT)


Runtime = SimpleNamespace  # never deserialises anything in tests

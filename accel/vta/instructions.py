"""The instructions of the `vta` dialect (see `dialect.py` for the ISA as a whole): the
memory-type and ALU enumerations, the shared instruction base (fields, dependency
flags), LOAD/STORE, GEMM/ALU and FINISH.

Verifiers check every field against the widths and scratchpad depths of the hardware
configuration the enclosing `vta.program` records (`config_of`), the default one when
it records none: a program for a bigger or smaller VTA verifies against its own.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    I64,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Operation, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from xweave.accel.vta.config import DEFAULT, HardwareConfig

CONFIG_ATTR = "config"
"""Attribute of a `vta.program`: the fields of its `HardwareConfig` that differ from
`DEFAULT` (absent: the default config)."""


def config_attr(config: HardwareConfig) -> DictionaryAttr:
    """`CONFIG_ATTR`'s value for `config`."""
    default = DEFAULT.to_dict()
    return DictionaryAttr({
        k: FloatAttr(v, f64) if isinstance(v, float) else IntegerAttr(v, i64)
        for k, v in config.to_dict().items() if v != default[k]})


def config_of(op: Operation) -> HardwareConfig:
    """The configuration `op` is verified against: its `vta.program`'s, else `DEFAULT`."""
    while op is not None and op.name != "vta.program":
        op = op.parent_op()
    attr = op.attributes.get(CONFIG_ATTR) if op is not None else None
    return _config(attr) if isinstance(attr, DictionaryAttr) else DEFAULT


@functools.lru_cache(maxsize=16)
def _config(attr: DictionaryAttr) -> HardwareConfig:
    try:
        return HardwareConfig.from_dict({k: v.value.data for k, v in attr.data.items()})
    except (AttributeError, TypeError, ValueError) as e:
        raise VerifyException(f"bad {CONFIG_ATTR} {attr} ({e})") from None


# --------------------------------------------------------------------------------------
# Enumerations (with their ISA codes)
# --------------------------------------------------------------------------------------


class MemoryType(StrEnum):
    """The scratchpad a LOAD writes or a STORE reads (the ISA's 3-bit memory_type),
    declared in the order of their ISA codes."""

    UOP = "uop"
    WGT = "wgt"
    INP = "inp"
    ACC = "acc"
    OUT = "out"


MEMORY_TYPE_CODES: dict[MemoryType, int] = {mem: code for code, mem in enumerate(MemoryType)}
"""ISA code of each memory type (code 5, ACC_8BIT of newer VTAs, is not supported)."""


class AluOpcode(StrEnum):
    """The tensor ALU's operation (the ISA's 3-bit alu_opcode), declared in the order of
    their ISA codes."""

    MIN = "min"
    MAX = "max"
    ADD = "add"
    SHR = "shr"
    MUL = "mul"


ALU_OPCODE_CODES: dict[AluOpcode, int] = {op: code for code, op in enumerate(AluOpcode)}
"""ISA code of each ALU opcode."""


@irdl_attr_definition
class MemoryTypeAttr(EnumAttribute[MemoryType], SpacedOpaqueSyntaxAttribute):
    """A memory type, `#vta<memory_type inp>` in generic form."""

    name = "vta.memory_type"


@irdl_attr_definition
class AluOpcodeAttr(EnumAttribute[AluOpcode], SpacedOpaqueSyntaxAttribute):
    """An ALU opcode, `#vta<alu_opcode max>` in generic form."""

    name = "vta.alu_opcode"


DEP_FLAGS: tuple[str, ...] = ("pop_prev", "pop_next", "push_prev", "push_next")
"""The four dependency-token flags, in ISA bit order (bits 3..6)."""


# --------------------------------------------------------------------------------------
# Helpers for custom syntax and verification
# --------------------------------------------------------------------------------------


def i64_attr(value: int) -> IntegerAttr:
    """An i64 property value."""
    return IntegerAttr(value, i64)


def check_unsigned(op: Operation, field: str, value: int, bits: int) -> None:
    """A verify error unless `value` fits an unsigned field of `bits` bits."""
    if not 0 <= value < (1 << bits):
        raise VerifyException(
            f"{field} = {value} does not fit in {bits} bits "
            f"(expected 0 <= {field} < {1 << bits})"
        )


def check_signed(op: Operation, field: str, value: int, bits: int, why: str = "") -> None:
    """A verify error unless `value` fits a signed field of `bits` bits."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= value <= hi:
        raise VerifyException(
            f"{field} = {value} does not fit in {bits} signed bits{why} "
            f"(expected {lo} <= {field} <= {hi})"
        )


def _parse_int(parser: Parser, keyword: str | None = None) -> int:
    if keyword is not None:
        parser.parse_keyword(keyword)
    return parser.parse_integer(allow_boolean=False)


def _parse_int_tuple(parser: Parser, keyword: str, n: int) -> list[int]:
    parser.parse_keyword(keyword)
    pos = parser.pos
    values = parser.parse_comma_separated_list(
        parser.Delimiter.PAREN, lambda: parser.parse_integer(allow_boolean=False)
    )
    if len(values) != n:
        parser.raise_error(f"'{keyword}' expects {n} integers, got {len(values)}", pos, parser.pos)
    return values


def _print_int_tuple(printer: Printer, keyword: str, values: Iterable[int]) -> None:
    printer.print_string(f" {keyword}(" + ", ".join(str(v) for v in values) + ")")


# --------------------------------------------------------------------------------------
# Integer fields, declared by tables
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IsaField:
    """One unsigned integer field of an instruction or micro-op: its name, the
    `HardwareConfig` attribute that gives its width in bits (index fields follow the
    scratchpad depths) and its meaning. A table of these drives an op's properties, its
    verifier and its place in the binary format (`encoding.layouts`)."""

    name: str
    width: str
    doc: str

    def bits(self, config: HardwareConfig) -> int:
        """The field's width under `config`."""
        return getattr(config, self.width)


class _FieldNames:
    """`INT_FIELDS` of an `IntegerFieldsOp` class: the names of its `FIELDS`."""

    def __init__(self) -> None:
        self._names: dict[type, tuple[str, ...]] = {}

    def __get__(self, op: object, owner: type[IntegerFieldsOp]) -> tuple[str, ...]:
        if owner not in self._names:
            self._names[owner] = tuple(f.name for f in owner.FIELDS)
        return self._names[owner]


class IntegerFieldsOp(IRDLOperation, abc.ABC):
    """An op whose plain integer fields are declared by its table `FIELDS`: each becomes
    an i64 property, read with `field`/`fields` and verified against its width."""

    FIELDS: ClassVar[tuple[IsaField, ...]] = ()
    """The op's integer fields, in ISA order (a subclass extends its base's table)."""
    INT_FIELDS: ClassVar[tuple[str, ...]] = _FieldNames()  # type: ignore[assignment]
    """The names of `FIELDS`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = {f.name for base in cls.__mro__[1:] for f in getattr(base, "FIELDS", ())}
        for f in cls.FIELDS:
            if f.name not in declared:  # a base's fields are already its properties
                setattr(cls, f.name, prop_def(IntegerAttr[I64]))

    def field(self, name: str) -> int:
        """The value of integer field `name` (e.g. `op.field("sram_base")`)."""
        if name not in self.INT_FIELDS:
            raise KeyError(f"{self.name} has no integer field {name!r}")
        attr = self.properties[name]
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    def fields(self) -> dict[str, int]:
        """All integer fields as a dict."""
        return {name: self.field(name) for name in self.INT_FIELDS}

    def _verify_fields(self) -> None:
        config = config_of(self)
        for f in self.FIELDS:
            check_unsigned(self, f.name, self.field(f.name), f.bits(config))


# --------------------------------------------------------------------------------------
# Instructions
# --------------------------------------------------------------------------------------


class VTAInstruction(IntegerFieldsOp, abc.ABC):
    """Base of the five 128-bit instructions: opcode, dependency flags, integer fields."""

    OPCODE: ClassVar[int]
    """The 3-bit ISA opcode."""

    pop_prev = opt_prop_def(UnitAttr)
    """Wait for a token from the previous module (load -> compute, compute -> store)."""
    pop_next = opt_prop_def(UnitAttr)
    """Wait for a token from the next module (compute -> load, store -> compute)."""
    push_prev = opt_prop_def(UnitAttr)
    """Signal the previous module after completing."""
    push_next = opt_prop_def(UnitAttr)
    """Signal the next module after completing."""

    # --- Python-side accessors ---------------------------------------------------------
    @property
    def deps(self) -> tuple[str, ...]:
        """The dependency flags that are set, in ISA order."""
        return tuple(f for f in DEP_FLAGS if f in self.properties)

    @property
    def stage(self) -> str:
        """The hardware module that executes this instruction: load, compute or store."""
        return "compute"

    # --- construction helpers ---------------------------------------------------------
    @staticmethod
    def _dep_props(deps: Iterable[str]) -> dict[str, Attribute]:
        props: dict[str, Attribute] = {}
        for flag in deps:
            if flag not in DEP_FLAGS:
                raise ValueError(f"unknown dependency flag {flag!r}; expected one of {DEP_FLAGS}")
            props[flag] = UnitAttr()
        return props

    @classmethod
    def _int_props(cls, values: Mapping[str, int]) -> dict[str, Attribute]:
        return {name: i64_attr(int(values[name])) for name in cls.INT_FIELDS}

    def _init_props(
        self, values: Mapping[str, int], deps: Iterable[str], **others: Attribute | None
    ) -> None:
        """Initialize the op from its integer field values, its dependency flags and its
        other properties (None: absent)."""
        props = self._int_props(values)
        props.update({name: attr for name, attr in others.items() if attr is not None})
        props.update(self._dep_props(deps))
        super().__init__(properties=self._ordered(props))

    @classmethod
    def _ordered(cls, props: Mapping[str, Attribute]) -> dict[str, Attribute]:
        """Properties in one canonical order (enum, reset, integer fields, imm, flags), so
        that the generic form does not depend on how an op was built."""
        order = ("memory_type", "alu_opcode", "reset", *cls.INT_FIELDS, "imm", *DEP_FLAGS)
        rank = {name: i for i, name in enumerate(order)}
        return dict(sorted(props.items(), key=lambda kv: rank.get(kv[0], len(order))))

    # --- shared syntax pieces ----------------------------------------------------------
    @staticmethod
    def _parse_deps(parser: Parser) -> dict[str, Attribute]:
        props: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("deps") is None:
            return props

        def one() -> None:
            pos = parser.pos
            flag = parser.parse_keyword_in(DEP_FLAGS, " (a dependency flag)")
            if flag in props:
                parser.raise_error(f"dependency flag '{flag}' given twice", pos, parser.pos)
            props[flag] = UnitAttr()

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
        return props

    def _print_deps_and_attrs(self, printer: Printer) -> None:
        if self.deps:
            printer.print_string(" deps(" + ", ".join(self.deps) + ")")
        printer.print_op_attributes(self.attributes, print_keyword=True)

    @classmethod
    def _finish_parse(cls, parser: Parser, props: dict[str, Attribute]) -> IRDLOperation:
        props.update(cls._parse_deps(parser))
        attrs = parser.parse_optional_attr_dict_with_keyword()
        return cls.create(properties=cls._ordered(props), attributes=attrs.data if attrs else {})


class _MemInstruction(VTAInstruction, abc.ABC):
    """Shared part of LOAD and STORE: a 2-D strided DMA between DRAM and a scratchpad."""

    OPCODE: ClassVar[int]
    FIELDS: ClassVar[tuple[IsaField, ...]] = (
        IsaField("sram_base", "sram_addr_bits", "First scratchpad element."),
        IsaField("dram_base", "dram_addr_bits",
                 "First DRAM element, in units of the memory type's element size."),
        IsaField("y_size", "size_bits", "Rows."),
        IsaField("x_size", "size_bits",
                 "Elements per row; 0 makes the instruction a token-only no-op."),
        IsaField("x_stride", "stride_bits", "DRAM row stride in elements."),
    )  # fmt: skip

    memory_type = prop_def(MemoryTypeAttr)
    """Which scratchpad."""

    @property
    def mem(self) -> MemoryType:
        """The memory type as a Python enum."""
        return self.memory_type.data

    def _print_mem(self, printer: Printer) -> None:
        f = self.fields()
        printer.print_string(
            f" {self.mem} sram {f['sram_base']} dram {f['dram_base']} y {f['y_size']}"
            f" x {f['x_size']} stride {f['x_stride']}"
        )

    @staticmethod
    def _parse_mem(parser: Parser) -> dict[str, Attribute]:
        mem = parser.parse_str_enum(MemoryType)
        props: dict[str, Attribute] = {"memory_type": MemoryTypeAttr(mem)}
        for keyword, name in (
            ("sram", "sram_base"), ("dram", "dram_base"), ("y", "y_size"),
            ("x", "x_size"), ("stride", "x_stride"),
        ):  # fmt: skip
            props[name] = i64_attr(_parse_int(parser, keyword))
        return props

    def _verify_footprint(self, written: int, depth_mem: str) -> None:
        base = self.field("sram_base")
        depth = config_of(self).depth(depth_mem)
        if self.field("x_size") and base + written > depth:
            raise VerifyException(
                f"{self.mem} elements [{base}, {base + written}) exceed the "
                f"{depth_mem} scratchpad (depth {depth})"
            )


@irdl_op_definition
class LoadOp(_MemInstruction):
    """DMA a 2-D strided, zero-padded block from DRAM into a scratchpad (opcode 0)."""

    name = "vta.load"
    OPCODE: ClassVar[int] = 0
    FIELDS: ClassVar[tuple[IsaField, ...]] = (
        *_MemInstruction.FIELDS,
        IsaField("y_pad_0", "pad_bits", "Zero rows written before the block."),
        IsaField("y_pad_1", "pad_bits", "Zero rows written after the block."),
        IsaField("x_pad_0", "pad_bits", "Zero elements written before each row."),
        IsaField("x_pad_1", "pad_bits", "Zero elements written after each row."),
    )
    LOADABLE: ClassVar[tuple[MemoryType, ...]] = (
        MemoryType.UOP, MemoryType.WGT, MemoryType.INP, MemoryType.ACC,
    )  # fmt: skip

    def __init__(
        self,
        memory_type: MemoryType | str,
        sram_base: int,
        dram_base: int,
        y_size: int,
        x_size: int,
        x_stride: int,
        y_pad_0: int = 0,
        y_pad_1: int = 0,
        x_pad_0: int = 0,
        x_pad_1: int = 0,
        deps: Iterable[str] = (),
    ):
        values = dict(
            sram_base=sram_base, dram_base=dram_base, y_size=y_size, x_size=x_size,
            x_stride=x_stride, y_pad_0=y_pad_0, y_pad_1=y_pad_1, x_pad_0=x_pad_0, x_pad_1=x_pad_1,
        )  # fmt: skip
        self._init_props(values, deps, memory_type=MemoryTypeAttr(MemoryType(memory_type)))

    @property
    def stage(self) -> str:
        return "load" if self.mem in (MemoryType.INP, MemoryType.WGT) else "compute"

    @property
    def pads(self) -> tuple[int, int, int, int]:
        """(y_pad_0, y_pad_1, x_pad_0, x_pad_1)."""
        y0, y1, x0, x1 = (self.field(n) for n in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"))
        return y0, y1, x0, x1

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        props = cls._parse_mem(parser)
        pads = [0, 0, 0, 0]
        if parser.parse_optional_keyword("pad") is not None:
            pos = parser.pos
            pads = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, lambda: parser.parse_integer(allow_boolean=False)
            )
            if len(pads) != 4:
                parser.raise_error(
                    "'pad' expects 4 integers (y_pad_0, y_pad_1, x_pad_0, x_pad_1)", pos, parser.pos
                )
        for name, value in zip(("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"), pads):
            props[name] = i64_attr(value)
        return cls._finish_parse(parser, props)  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        self._print_mem(printer)
        if any(self.pads):
            _print_int_tuple(printer, "pad", self.pads)
        self._print_deps_and_attrs(printer)

    def verify_(self) -> None:
        if self.mem not in self.LOADABLE:
            raise VerifyException(
                f"cannot load into '{self.mem}' (expected uop, wgt, inp or acc)"
            )
        self._verify_fields()
        if self.stage == "load" and {"pop_prev", "push_prev"} & set(self.deps):
            raise VerifyException(
                f"a load of {self.mem} runs in the load module, which has no previous "
                "module: pop_prev/push_prev are not allowed"
            )
        y0, y1, x0, x1 = self.pads
        if self.mem == MemoryType.UOP and any(self.pads):
            raise VerifyException("uop loads take no padding")
        rows = self.field("y_size") + y0 + y1
        cols = self.field("x_size") + x0 + x1
        self._verify_footprint(rows * cols, str(self.mem))


@irdl_op_definition
class StoreOp(_MemInstruction):
    """DMA a 2-D strided block of accumulators, narrowed to out_bits, to DRAM (opcode 1)."""

    name = "vta.store"
    OPCODE: ClassVar[int] = 1

    def __init__(
        self,
        sram_base: int,
        dram_base: int,
        y_size: int,
        x_size: int,
        x_stride: int,
        memory_type: MemoryType | str = MemoryType.OUT,
        deps: Iterable[str] = (),
    ):
        values = dict(
            sram_base=sram_base, dram_base=dram_base, y_size=y_size, x_size=x_size,
            x_stride=x_stride,
        )  # fmt: skip
        self._init_props(values, deps, memory_type=MemoryTypeAttr(MemoryType(memory_type)))

    @property
    def stage(self) -> str:
        return "store"

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        return cls._finish_parse(parser, cls._parse_mem(parser))  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        self._print_mem(printer)
        self._print_deps_and_attrs(printer)

    def verify_(self) -> None:
        if self.mem != MemoryType.OUT:
            raise VerifyException(f"can only store from 'out', not '{self.mem}'")
        self._verify_fields()
        if {"pop_next", "push_next"} & set(self.deps):
            raise VerifyException(
                "the store module has no next module: pop_next/push_next are not allowed"
            )
        self._verify_footprint(self.field("y_size") * self.field("x_size"), "out")


def _src_factors(index_width: str) -> tuple[IsaField, ...]:
    """The source index steps of a kernel whose source is the scratchpad `index_width` indexes."""
    return (
        IsaField("src_factor_out", index_width, "Source index step per outer iteration."),
        IsaField("src_factor_in", index_width, "Source index step per inner iteration."),
    )


class _KernelInstruction(VTAInstruction, abc.ABC):
    """Shared part of GEMM and ALU: a micro-kernel walked by a two-level loop."""

    FIELDS: ClassVar[tuple[IsaField, ...]] = (
        IsaField("uop_bgn", "uop_bgn_bits", "First micro-op slot in the uop scratchpad."),
        IsaField("uop_end", "uop_end_bits", "One past the last micro-op slot."),
        IsaField("iter_out", "loop_iter_bits", "Extent of the outer loop."),
        IsaField("iter_in", "loop_iter_bits", "Extent of the inner loop."),
        IsaField("dst_factor_out", "log_acc_depth", "Accumulator index step per outer iteration."),
        IsaField("dst_factor_in", "log_acc_depth", "Accumulator index step per inner iteration."),
    )

    reset = opt_prop_def(UnitAttr)
    """Zero the addressed accumulators instead of computing (VTA's reset_reg)."""

    @property
    def is_reset(self) -> bool:
        return self.reset is not None

    def _print_kernel(self, printer: Printer) -> None:
        f = self.fields()
        printer.print_string(f" uop[{f['uop_bgn']}:{f['uop_end']}]")
        _print_int_tuple(printer, "iter", (f["iter_out"], f["iter_in"]))
        _print_int_tuple(printer, "dst", (f["dst_factor_out"], f["dst_factor_in"]))
        _print_int_tuple(printer, "src", (f["src_factor_out"], f["src_factor_in"]))

    @staticmethod
    def _parse_kernel(parser: Parser, props: dict[str, Attribute]) -> None:
        parser.parse_keyword("uop")
        parser.parse_punctuation("[")
        props["uop_bgn"] = i64_attr(parser.parse_integer(allow_boolean=False))
        parser.parse_punctuation(":")
        props["uop_end"] = i64_attr(parser.parse_integer(allow_boolean=False))
        parser.parse_punctuation("]")
        for keyword in ("iter", "dst", "src"):
            outer, inner = _parse_int_tuple(parser, keyword, 2)
            base = {"iter": "iter", "dst": "dst_factor", "src": "src_factor"}[keyword]
            props[f"{base}_out"] = i64_attr(outer)
            props[f"{base}_in"] = i64_attr(inner)

    def _verify_kernel(self) -> None:
        c = config_of(self)
        self._verify_fields()
        bgn, end = self.field("uop_bgn"), self.field("uop_end")
        if end <= bgn:
            raise VerifyException(
                f"uop_end ({end}) must be greater than uop_bgn ({bgn})"
            )
        if end > c.uop_depth:
            raise VerifyException(
                f"uop_end ({end}) exceeds the uop scratchpad depth ({c.uop_depth})"
            )


@irdl_op_definition
class GemmOp(_KernelInstruction):
    """acc[dst] += inp[src] . wgt[wgt]^T for each micro-op of a two-level loop (opcode 2)."""

    name = "vta.gemm"
    OPCODE: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[IsaField, ...]] = (
        *_KernelInstruction.FIELDS,
        *_src_factors("log_inp_depth"),
        IsaField("wgt_factor_out", "log_wgt_depth", "Weight index step per outer iteration."),
        IsaField("wgt_factor_in", "log_wgt_depth", "Weight index step per inner iteration."),
    )

    def __init__(
        self,
        uop_bgn: int,
        uop_end: int,
        iter_out: int = 1,
        iter_in: int = 1,
        dst_factor_out: int = 0,
        dst_factor_in: int = 0,
        src_factor_out: int = 0,
        src_factor_in: int = 0,
        wgt_factor_out: int = 0,
        wgt_factor_in: int = 0,
        reset: bool = False,
        deps: Iterable[str] = (),
    ):
        values = dict(
            uop_bgn=uop_bgn, uop_end=uop_end, iter_out=iter_out, iter_in=iter_in,
            dst_factor_out=dst_factor_out, dst_factor_in=dst_factor_in,
            src_factor_out=src_factor_out, src_factor_in=src_factor_in,
            wgt_factor_out=wgt_factor_out, wgt_factor_in=wgt_factor_in,
        )  # fmt: skip
        self._init_props(values, deps, reset=UnitAttr() if reset else None)

    @classmethod
    def parse(cls, parser: Parser) -> GemmOp:
        props: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("reset") is not None:
            props["reset"] = UnitAttr()
        cls._parse_kernel(parser, props)
        outer, inner = _parse_int_tuple(parser, "wgt", 2)
        props["wgt_factor_out"], props["wgt_factor_in"] = i64_attr(outer), i64_attr(inner)
        return cls._finish_parse(parser, props)  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        if self.is_reset:
            printer.print_string(" reset")
        self._print_kernel(printer)
        _print_int_tuple(printer, "wgt", (self.field("wgt_factor_out"), self.field("wgt_factor_in")))
        self._print_deps_and_attrs(printer)

    def verify_(self) -> None:
        self._verify_kernel()


@irdl_op_definition
class AluOp(_KernelInstruction):
    """acc[dst] = op(acc[dst], imm or acc[src]) lane-wise, per micro-op of a two-level loop (opcode 4)."""

    name = "vta.alu"
    OPCODE: ClassVar[int] = 4
    FIELDS: ClassVar[tuple[IsaField, ...]] = (
        *_KernelInstruction.FIELDS, *_src_factors("log_acc_depth"),
    )  # fmt: skip

    alu_opcode = prop_def(AluOpcodeAttr)
    """min, max, add, shr (arithmetic; negative amounts shift left) or mul."""
    imm = opt_prop_def(IntegerAttr[I64])
    """The immediate second operand (signed 16 bits); present exactly when VTA's use_imm is set."""

    def __init__(
        self,
        alu_opcode: AluOpcode | str,
        uop_bgn: int,
        uop_end: int,
        iter_out: int = 1,
        iter_in: int = 1,
        dst_factor_out: int = 0,
        dst_factor_in: int = 0,
        src_factor_out: int = 0,
        src_factor_in: int = 0,
        imm: int | None = None,
        reset: bool = False,
        deps: Iterable[str] = (),
    ):
        values = dict(
            uop_bgn=uop_bgn, uop_end=uop_end, iter_out=iter_out, iter_in=iter_in,
            dst_factor_out=dst_factor_out, dst_factor_in=dst_factor_in,
            src_factor_out=src_factor_out, src_factor_in=src_factor_in,
        )  # fmt: skip
        self._init_props(
            values, deps,
            alu_opcode=AluOpcodeAttr(AluOpcode(alu_opcode)),
            imm=None if imm is None else i64_attr(imm),
            reset=UnitAttr() if reset else None,
        )  # fmt: skip

    @property
    def op(self) -> AluOpcode:
        """The ALU opcode as a Python enum."""
        return self.alu_opcode.data

    @property
    def use_imm(self) -> bool:
        return self.imm is not None

    @property
    def imm_value(self) -> int | None:
        """The immediate as a Python int, or None (operand from acc[src])."""
        return None if self.imm is None else self.imm.value.data

    @classmethod
    def parse(cls, parser: Parser) -> AluOp:
        props: dict[str, Attribute] = {}
        if parser.parse_optional_keyword("reset") is not None:
            props["reset"] = UnitAttr()
        props["alu_opcode"] = AluOpcodeAttr(parser.parse_str_enum(AluOpcode))
        cls._parse_kernel(parser, props)
        if parser.parse_optional_keyword("imm") is not None:
            props["imm"] = i64_attr(parser.parse_integer(allow_boolean=False))
        return cls._finish_parse(parser, props)  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        if self.is_reset:
            printer.print_string(" reset")
        printer.print_string(f" {self.op}")
        self._print_kernel(printer)
        if self.imm is not None:
            printer.print_string(f" imm {self.imm_value}")
        self._print_deps_and_attrs(printer)

    def verify_(self) -> None:
        c = config_of(self)
        self._verify_kernel()
        imm = self.imm_value
        if imm is None:
            return
        check_signed(self, "imm", imm, c.alu_imm_bits)
        if self.op == AluOpcode.SHR:
            check_signed(self, "imm", imm, c.shr_arg_bits, " (the shift amount of shr)")
        if self.op == AluOpcode.MUL:
            check_signed(self, "imm", imm, c.mul_arg_bits, " (the factor of mul)")


@irdl_op_definition
class FinishOp(VTAInstruction):
    """Signal the host that the program has completed (opcode 3)."""

    name = "vta.finish"
    OPCODE: ClassVar[int] = 3

    def __init__(self, deps: Iterable[str] = ()):
        super().__init__(properties=self._dep_props(deps))

    @classmethod
    def parse(cls, parser: Parser) -> FinishOp:
        return cls._finish_parse(parser, {})  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        self._print_deps_and_attrs(printer)

    def verify_(self) -> None:
        if {"pop_prev", "pop_next"} & set(self.deps):
            raise VerifyException(
                "FINISH may not pop dependency tokens (pop_prev/pop_next); "
                "pop them on an earlier compute instruction"
            )


INSTRUCTIONS: tuple[type[VTAInstruction], ...] = (LoadOp, StoreOp, GemmOp, FinishOp, AluOp)
"""The five instruction ops (each knows its ISA opcode as `OPCODE`)."""

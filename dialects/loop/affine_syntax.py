"""The custom syntax of affine expressions over SSA values: `%i * 2 + %k - 1`."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)
from xdsl.printer import Printer


_PRECEDENCE = {
    AffineBinaryOpKind.Add: 10,
    AffineBinaryOpKind.Mul: 20,
    AffineBinaryOpKind.Mod: 20,
    AffineBinaryOpKind.FloorDiv: 20,
    AffineBinaryOpKind.CeilDiv: 20,
}


def _negated(expr: AffineExpr) -> AffineExpr | None:
    """`e` if `expr` is `-c` (c > 0), `e * -1` or `e * -c`, to print `a - e`."""
    match expr:
        case AffineConstantExpr(value=v) if v < 0:
            return AffineConstantExpr(-v)
        case AffineBinaryOpExpr(
            kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=AffineConstantExpr(value=v)
        ) if v < 0:
            return lhs if v == -1 else AffineBinaryOpExpr(
                AffineBinaryOpKind.Mul, lhs, AffineConstantExpr(-v)
            )
    return None


def print_affine_expr(
    printer: Printer,
    expr: AffineExpr,
    operands: Sequence[SSAValue],
    num_dims: int,
    min_prec: int = 0,
) -> None:
    """Print an affine expression with SSA names for dims and symbols, as MLIR does."""
    match expr:
        case AffineConstantExpr(value=value):
            printer.print_string(str(value))
        case AffineDimExpr(position=position) if position < len(operands):
            printer.print_ssa_value(operands[position])
        case AffineSymExpr(position=position) if num_dims + position < len(operands):
            printer.print_ssa_value(operands[num_dims + position])
        case AffineDimExpr() | AffineSymExpr():
            printer.print_string(f"<<missing operand {expr}>>")  # only in invalid IR
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
            prec = _PRECEDENCE[kind]
            parens = prec < min_prec
            if parens:
                printer.print_string("(")
            if (
                kind == AffineBinaryOpKind.Add
                and isinstance(rhs, AffineConstantExpr)
                and rhs.value >= 0
                and (negated := _negated(lhs)) is not None
            ):  # `e * -1 + c` reads `c - e`
                printer.print_string(f"{rhs.value} - ")
                print_affine_expr(printer, negated, operands, num_dims, prec + 1)
            elif kind == AffineBinaryOpKind.Add and (negated := _negated(rhs)) is not None:
                print_affine_expr(printer, lhs, operands, num_dims, prec)
                printer.print_string(" - ")  # `e + -c` reads `e - c`
                print_affine_expr(printer, negated, operands, num_dims, prec + 1)
            else:
                print_affine_expr(printer, lhs, operands, num_dims, prec)
                printer.print_string(f" {kind.get_token()} ")
                right_prec = prec if kind == AffineBinaryOpKind.Add else prec + 1
                print_affine_expr(printer, rhs, operands, num_dims, right_prec)
            if parens:
                printer.print_string(")")
        case _:
            raise ValueError(f"unexpected affine expression {expr}")


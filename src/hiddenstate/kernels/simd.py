"""Eight float64 lanes as one value, for kernels that run 8 sequences in lockstep.

Numba's auto-vectoriser handles loops whose trip count is small and known only at run
time (the number of states ``K``) poorly: it either leaves them scalar or vectorises the
wrong loop with gathers. The lockstep kernels therefore hold one number per lane in a
:data:`f64x8` value (an LLVM ``<8 x double>``: one AVX-512 register, two AVX2 registers,
four SSE/NEON registers; the code is portable, only its speed depends on the machine) and
spell out the vector operations with the intrinsics below. Arithmetic is plain IEEE
float64: ``vfma`` is ``a * b + c`` with a single rounding where the machine has FMA.

Arrays are addressed by a *flat* element offset and must be C-contiguous float64 (int64
for the offsets of :func:`vgather`). Bounds are checked only when numba's own bounds
checking is on: an access out of the array then raises IndexError like any numba indexing.
That is how the kernels' memory safety is verified (one thread, because an exception raised
in another thread of a parallel loop is lost; a fresh cache, because the cache does not
know about the setting)::

    NUMBA_BOUNDSCHECK=1 NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=$(mktemp -d) \
        .venv/bin/python -m pytest tests/test_kernels.py
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, config
from numba.core.errors import TypingError
from numba.extending import intrinsic, models, register_model

LANES = 8
_vec = ir.VectorType(ir.DoubleType(), LANES)
_i32 = ir.IntType(32)


class F64x8(types.Type):
    def __init__(self):
        super().__init__(name="f64x8")


f64x8 = F64x8()


@register_model(F64x8)
class _F64x8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _vec)


def _check_array(arr, dtype=types.float64):
    if not (isinstance(arr, types.Array) and arr.dtype == dtype and arr.layout == "C"):
        raise TypingError(f"simd: expected a C-contiguous {dtype} array, got {arr}")


def _element_ptr(context, builder, arrty, arr, offset, count=1):
    """Pointer to element ``offset`` of ``arr`` (``count`` elements from there are read)."""
    ary = context.make_array(arrty)(context, builder, arr)
    if config.BOUNDSCHECK:
        cgutils.do_boundscheck(context, builder, offset, ary.nitems)
        last = builder.add(offset, ir.Constant(offset.type, count - 1))
        cgutils.do_boundscheck(context, builder, last, ary.nitems)
    return builder.gep(ary.data, [offset], inbounds=True)


@intrinsic
def vload(typingctx, arr, offset):
    """``arr.flat[offset : offset + 8]`` as one vector."""
    _check_array(arr)

    def codegen(context, builder, sig, args):
        ptr = _element_ptr(context, builder, sig.args[0], args[0], args[1], LANES)
        return builder.load(builder.bitcast(ptr, _vec.as_pointer()), align=8)

    return f64x8(arr, offset), codegen


@intrinsic
def vstore(typingctx, arr, offset, v):
    """``arr.flat[offset : offset + 8] = v``."""
    _check_array(arr)

    def codegen(context, builder, sig, args):
        ptr = _element_ptr(context, builder, sig.args[0], args[0], args[1], LANES)
        builder.store(args[2], builder.bitcast(ptr, _vec.as_pointer()), align=8)
        return context.get_dummy_value()

    return types.none(arr, offset, v), codegen


@intrinsic
def vgather(typingctx, arr, offsets, j):
    """``[arr.flat[offsets[b] + j] for b in range(8)]``: column ``j`` of 8 rows."""
    _check_array(arr)
    _check_array(offsets, types.int64)

    def codegen(context, builder, sig, args):
        v = ir.Constant(_vec, ir.Undefined)
        for b in range(LANES):
            o = builder.load(_element_ptr(context, builder, sig.args[1], args[1],
                                          ir.Constant(ir.IntType(64), b)))
            x = builder.load(_element_ptr(context, builder, sig.args[0], args[0],
                                          builder.add(o, args[2])))
            v = builder.insert_element(v, x, ir.Constant(_i32, b))
        return v

    return f64x8(arr, offsets, j), codegen


@intrinsic
def vsplat(typingctx, x):
    """The scalar ``x`` in every lane."""
    if not isinstance(x, (types.Float, types.Integer)):
        raise TypingError(f"vsplat: expected a number, got {x}")

    def codegen(context, builder, sig, args):
        s = context.cast(builder, args[0], sig.args[0], types.float64)
        v = builder.insert_element(ir.Constant(_vec, ir.Undefined), s, ir.Constant(_i32, 0))
        zeros = ir.Constant(ir.VectorType(_i32, LANES), [0] * LANES)
        return builder.shuffle_vector(v, ir.Constant(_vec, ir.Undefined), zeros)

    return f64x8(x), codegen


@intrinsic
def vget(typingctx, v, lane):
    """Lane ``lane`` of ``v`` as a scalar."""

    def codegen(context, builder, sig, args):
        return builder.extract_element(args[0], args[1])

    return types.float64(v, lane), codegen


def _binary(opname, doc):
    def typer(typingctx, a, b):
        if a != f64x8 or b != f64x8:
            raise TypingError(f"simd: expected two f64x8, got {a}, {b}")

        def codegen(context, builder, sig, args):
            return getattr(builder, opname)(args[0], args[1])

        return f64x8(a, b), codegen

    typer.__doc__ = doc
    return intrinsic(typer)


vadd = _binary("fadd", "Lane-wise ``a + b``.")
vsub = _binary("fsub", "Lane-wise ``a - b``.")
vmul = _binary("fmul", "Lane-wise ``a * b``.")
vdiv = _binary("fdiv", "Lane-wise ``a / b``.")


@intrinsic
def vfma(typingctx, a, b, c):
    """Lane-wise ``a * b + c`` (``llvm.fmuladd``: fused where the machine has FMA)."""

    def codegen(context, builder, sig, args):
        fnty = ir.FunctionType(_vec, [_vec] * 3)
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.fmuladd.v8f64")
        return builder.call(fn, args)

    return f64x8(a, b, c), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """Scalar ``a * b + c`` (float64, ``llvm.fmuladd``): the lane-wise :func:`vfma` of one
    lane, so that a one-lane kernel rounds exactly as the 8-lane one."""
    if not all(isinstance(x, types.Float) for x in (a, b, c)):
        raise TypingError(f"fma: expected three floats, got {a}, {b}, {c}")

    def codegen(context, builder, sig, args):
        f64 = ir.DoubleType()
        vals = [context.cast(builder, v, t, types.float64)
                for v, t in zip(args, sig.args, strict=True)]
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f64, [f64] * 3),
                                            "llvm.fmuladd.f64")
        return builder.call(fn, vals)

    return types.float64(a, b, c), codegen


@intrinsic
def vwhere_gt(typingctx, a, b, x, y):
    """Lane-wise ``x if a > b else y`` (ordered compare: a NaN lane picks ``y``)."""

    def codegen(context, builder, sig, args):
        return builder.select(builder.fcmp_ordered(">", args[0], args[1]), args[2], args[3])

    return f64x8(a, b, x, y), codegen


@njit(cache=True)
def aligned_empty(n):
    """``np.empty(n)`` (float64) starting on a 64-byte boundary.

    Vectors at multiples of 8 entries from its start then never straddle two cache lines
    (numba's own allocations are only 32-byte aligned, which splits every AVX-512 access).
    """
    buf = np.empty(n + LANES)
    skip = (-buf.ctypes.data) % 64 // 8
    return buf[skip:skip + n]

"""Register-level byte swapping and bit casting for Numba kernels.

Numba refuses arrays whose byte order is not native, so kernels take *native unsigned views*
(``u1/u2/u4/u8``) of the stored bytes. For big-endian stored values these intrinsics swap a
value in a register (LLVM ``bswap``, which the vectoriser turns into a shuffle) and reinterpret
the bits as the stored type, so the conversion never touches memory. Values already in native
order (decoded tiles) take the ``native_*`` variants, which only reinterpret the bits.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = [
    "NATIVE",
    "SWAPPED",
    "load_f4",
    "load_f8",
    "load_i1",
    "load_i2",
    "load_i4",
    "load_i8",
    "load_u1",
    "put_at",
    "raw_u2_at",
    "raw_u4_at",
    "raw_u8_at",
    "swap_bits",
]


def _make_loader(utype: types.Integer, vtype: types.Number, name: str, swap: bool = True):
    """Build an intrinsic ``raw -> value`` that bswaps (when ``swap``) then bit-casts."""

    @intrinsic
    def _swap(typingctx, raw):
        if raw != utype:
            return None
        sig = vtype(utype)

        def codegen(context, builder, signature, args):
            (value,) = args
            if swap and utype.bitwidth > 8:
                value = builder.bswap(value)
            target = context.get_value_type(vtype)
            if isinstance(target, ir.IntType):
                return value
            return builder.bitcast(value, target)

        return sig, codegen

    _swap.__name__ = name
    return _swap


#: uint16 stored big-endian → int16
load_i2 = _make_loader(types.uint16, types.int16, "load_i2")
load_i4 = _make_loader(types.uint32, types.int32, "load_i4")
load_i8 = _make_loader(types.uint64, types.int64, "load_i8")
load_f4 = _make_loader(types.uint32, types.float32, "load_f4")
load_f8 = _make_loader(types.uint64, types.float64, "load_f8")

load_u1 = _make_loader(types.uint8, types.uint8, "load_u1")
#: uint8 bits → int8 (used after flipping the top bit for BZERO = -128)
load_i1 = _make_loader(types.uint8, types.int8, "load_i1")

#: BITPIX → loader of the stored type's value, for big-endian stored values (swapped)
SWAPPED = {8: load_u1, 16: load_i2, 32: load_i4, 64: load_i8, -32: load_f4, -64: load_f8}

#: BITPIX → loader for values already in native order (bit casts only)
NATIVE = {
    8: load_u1,
    16: _make_loader(types.uint16, types.int16, "native_i2", swap=False),
    32: _make_loader(types.uint32, types.int32, "native_i4", swap=False),
    64: _make_loader(types.uint64, types.int64, "native_i8", swap=False),
    -32: _make_loader(types.uint32, types.float32, "native_f4", swap=False),
    -64: _make_loader(types.uint64, types.float64, "native_f8", swap=False),
}


@intrinsic
def swap_bits(typingctx, raw):
    """Byte-swap an unsigned integer, keeping its type (for BLANK tests on raw values)."""
    if not isinstance(raw, types.Integer):
        return None
    sig = raw(raw)

    def codegen(context, builder, signature, args):
        (value,) = args
        if raw.bitwidth > 8:
            return builder.bswap(value)
        return value

    return sig, codegen


def _make_unaligned(utype: types.Integer, name: str):
    """Build an intrinsic ``(buf, i) -> raw``: the ``utype`` whose bytes start at ``buf[i]``
    (a C-contiguous ``uint8`` array), in memory order, read with one unaligned load.

    A table field lies at any byte offset of its row; gathering its bytes one at a time and
    shifting them together costs about three times the load. No bounds check: the caller
    guarantees ``i + size <= buf.size``.
    """

    @intrinsic
    def _at(typingctx, buf, i):
        if not (isinstance(buf, types.Array) and buf.dtype == types.uint8):
            return None
        if not isinstance(i, types.Integer):
            return None
        sig = utype(buf, i)

        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            ptr = builder.gep(ary.data, [args[1]])
            ptr = builder.bitcast(ptr, context.get_value_type(utype).as_pointer())
            return builder.load(ptr, align=1)

        return sig, codegen

    _at.__name__ = name
    return _at


#: the raw (memory-order) uint16/uint32/uint64 at a byte index of a uint8 buffer
raw_u2_at = _make_unaligned(types.uint16, "raw_u2_at")
raw_u4_at = _make_unaligned(types.uint32, "raw_u4_at")
raw_u8_at = _make_unaligned(types.uint64, "raw_u8_at")


@intrinsic
def put_at(typingctx, buf, i, value):
    """Store the integer ``value`` at ``buf[i]`` (a C-contiguous ``uint8`` array) as its bytes
    lie in a register (native order), with one unaligned store. No bounds check: the caller
    guarantees ``i + size <= buf.size``."""
    if not (isinstance(buf, types.Array) and buf.dtype == types.uint8):
        return None
    if not (isinstance(i, types.Integer) and isinstance(value, types.Integer)):
        return None
    sig = types.void(buf, i, value)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        ptr = builder.bitcast(ptr, context.get_value_type(signature.args[2]).as_pointer())
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()

    return sig, codegen

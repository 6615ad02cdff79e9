"""Arrays without reference counting, for the inside of one kernel call.

Every numba array carries a pointer to its reference count, and numba updates
it atomically whenever an array is bound, passed or unpacked from a tuple.
The kernels pass the grammar and the state as tuples of some sixty arrays, so
each call of a helper makes about 120 atomic updates, which take much of a
sweep's time (docs/performance.md). `borrowed` returns the same arrays with a
null reference-count pointer, which numba skips.

Only for values that live no longer than the caller's own references: a kernel
called from Python borrows its arguments on entry and never returns or stores
them.
"""
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic


def _without_meminfo(context, builder, ty, value):
    """The value with every array in it (nested tuples included) given a null meminfo.

    Nothing in the result is counted, so numba treating it as a new reference
    (it decrefs it when done) touches no count of the caller's arrays."""
    if isinstance(ty, types.Array):
        array = context.make_array(ty)(context, builder, value=value)
        array.meminfo = ir.Constant(array.meminfo.type, None)
        return array._getvalue()
    if isinstance(ty, types.BaseTuple):
        for i, member_ty in enumerate(ty):
            member = builder.extract_value(value, i)
            value = builder.insert_value(value, _without_meminfo(context, builder, member_ty, member), i)
        return value
    return value


def _countable(ty):
    if isinstance(ty, types.BaseTuple):
        return all(_countable(t) for t in ty)
    return isinstance(ty, (types.Array, types.Number, types.Boolean))


@intrinsic
def borrowed(typingctx, value):
    """`value` (an array, or a tuple of arrays, tuples and numbers) with no reference counts."""
    if not _countable(value):
        return None

    def codegen(context, builder, sig, args):
        return _without_meminfo(context, builder, sig.args[0], args[0])
    return value(value), codegen

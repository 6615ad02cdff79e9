"""A tiny counter-free generator (xoshiro256**) whose state is a numpy array.

numba's built-in generator is process-global and invisible to Python, so a
checkpoint could not capture it. Keeping the four state words in an array
makes every chain's stream explicit: it is saved, restored and derived from
one seed (splitmix64), which is what bit-for-bit resume needs.
"""
import numpy as np
from ..kernel_environment import kernel

_MASK = (1 << 64) - 1


def _splitmix64(x: int):
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return x, z ^ (z >> 31)


def make_rng(seed: int) -> np.ndarray:
    """Four state words from an integer seed (never all zero)."""
    x = int(seed) & _MASK
    words = []
    for _ in range(4):
        x, z = _splitmix64(x)
        words.append(z)
    return np.array(words, dtype=np.uint64)


@kernel(cache=True, inline="always")
def splitmix64(x):
    """The splitmix64 output for state `x` (a uint64): a well-mixed 64-bit value."""
    z = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@kernel(cache=True)
def seeded_rng(seed):
    """xoshiro256** state from one 64-bit seed (splitmix64), as `make_rng` gives it, in a kernel.

    Shapes: returns (4,) uint64."""
    out = np.empty(4, np.uint64)
    x = np.uint64(seed)
    for i in range(4):
        x += np.uint64(0x9E3779B97F4A7C15)
        out[i] = splitmix64(x)
    return out


@kernel(cache=True, inline="always")
def _rotl(x, k):
    """x rotated left by k bits (a uint64)."""
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@kernel(cache=True)
def next_u64(s):
    """The next 64-bit output of the xoshiro256** stream s, advancing it.

    Shapes: s (4,) uint64, updated in place."""
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@kernel(cache=True)
def uniform(s):
    """A double in [0, 1).

    Shapes: s (4,) uint64, advanced."""
    return float(next_u64(s) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel(cache=True)
def uniform_pos(s):
    """A double in (0, 1), safe to take the log of.

    Shapes: s (4,) uint64, advanced."""
    return (float(next_u64(s) >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@kernel(cache=True)
def randint(s, n):
    """An integer in [0, n).

    Shapes: s (4,) uint64, advanced."""
    return int(uniform(s) * n)


@kernel(cache=True)
def shuffle(s, arr):
    """Shuffle arr in place (Fisher-Yates) with the stream s, so that an order is reproducible from the seed.

    Shapes: s (4,) uint64; arr (m,) of any dtype."""
    for i in range(arr.shape[0] - 1, 0, -1):
        j = randint(s, i + 1)
        tmp = arr[i]
        arr[i] = arr[j]
        arr[j] = tmp


@kernel(cache=True)
def stream_seed(x, i):
    """The seed of item i's random stream under the 64-bit key `x`: the splitmix64 output for
    state (x ^ i) + the golden gamma (`online.mix_seeds(..., i)`)."""
    return splitmix64((np.uint64(x) ^ np.uint64(i)) + np.uint64(0x9E3779B97F4A7C15))


@kernel(cache=True)
def stream_seeds(x, n):
    """(n,) uint64: `stream_seed(x, i)` for i < n."""
    out = np.empty(n, np.uint64)
    for i in range(n):
        out[i] = stream_seed(x, i)
    return out

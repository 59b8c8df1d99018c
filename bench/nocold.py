"""bench/nocold.py: `fusec bench --no-cold-compile` where the fusec given has it, for the
benchmark scripts of bench/.

Without the flag every `fusec bench` builds its function once without the cache to time a cold
compile (an NVRTC build on a GPU): a script that sweeps sizes or rounds pays that build each
call, and the build runs just before the timed runs. With it the first call builds through the
cache and the others find the module there. An older build (an A/B run's --fusec) has no such
flag: the scripts ask its --help once and leave the flag out there."""
import subprocess

_SEEN = {}


def no_cold_flag(fusec):
    """["--no-cold-compile"], or [] where this fusec does not know the flag."""
    if fusec not in _SEEN:
        try:
            h = subprocess.run([fusec, "--help"], capture_output=True, text=True, timeout=60)
            text = h.stdout + h.stderr
        except OSError:
            text = ""
        _SEEN[fusec] = ["--no-cold-compile"] if "--no-cold-compile" in text else []
    return _SEEN[fusec]

"""Docker runtime benchmark: first image build, cached start to the first echo, echo latency.

Usage: python benchmarks/docker.py [--base-image IMAGE] [--echoes N] [--starts N] [--skip-build]
Progress goes to stderr; the last line on stdout is ONE JSON object:
`start_cached_s` (median of --starts: runtime start to a completed `echo`, image built),
`echo_ms_median`, `image_build_s` (a first build from the base image, Docker's layer cache
off; the host wheelhouse is reused), `image_mb`.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and this module, named
# "docker", would hide the docker SDK: take the folder off.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from sandbox.protocol import CmdOutputObservation, CmdRunAction  # noqa: E402
from sandbox.runtimes.docker import DockerRuntime  # noqa: E402
from sandbox.runtimes.docker_image import (  # noqa: E402
    OFFLINE_BASE_IMAGE,
    docker_client,
    ensure_image,
)

BENCH_PREFIX = "workbench-sandbox-bench"


def log(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def measure_build(base_image: str) -> float:
    """Seconds for a build of the sandbox image with no layer cache (then removed)."""
    client = docker_client(timeout=600)
    before = {image.id for image in client.images.list(all=True)}
    started = time.perf_counter()
    tag = ensure_image(base_image, BENCH_PREFIX, progress=lambda _line: None, no_cache=True)
    elapsed = time.perf_counter() - started
    client.images.remove(tag, force=True)
    for image in client.images.list(filters={"dangling": True}):
        if image.id not in before:  # the build's first stage, a duplicate of the cached one
            client.images.remove(image.id, force=True)
    return elapsed


async def echo(runtime: DockerRuntime, text: str) -> None:
    """Run `echo text` and check it came back."""
    obs = await runtime.execute(CmdRunAction(command=f"echo {text}"))
    if not isinstance(obs, CmdOutputObservation) or text not in obs.content:
        raise RuntimeError(f"echo failed: {obs!r}")


async def measure_runtime(
    base_image: str, starts: int, echoes: int
) -> tuple[list[float], float, str]:
    """Cached start-to-first-echo times, the median echo round trip in ms, the image used."""
    start_times: list[float] = []
    echo_ms: list[float] = []
    image = ""
    with tempfile.TemporaryDirectory(prefix="bench-docker-") as tmp:
        for index in range(starts):
            runtime = DockerRuntime(Path(tmp) / f"ws{index}", base_image=base_image)
            started = time.perf_counter()
            await runtime.start()
            await echo(runtime, "ready")
            start_times.append(time.perf_counter() - started)
            log(f"start {index + 1}/{starts}: {start_times[-1]:.2f} s")
            if index == starts - 1:
                for number in range(echoes):
                    began = time.perf_counter()
                    await echo(runtime, f"n{number}")
                    echo_ms.append((time.perf_counter() - began) * 1000)
            image = runtime.image or ""
            await runtime.close()
    return start_times, statistics.median(echo_ms), image


def main() -> None:
    """Run the measurements and print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-image", default=OFFLINE_BASE_IMAGE)
    parser.add_argument("--echoes", type=int, default=100)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--skip-build", action="store_true", help="do not time a fresh build")
    args = parser.parse_args()

    ensure_image(args.base_image, progress=log)  # built before the timed starts
    build_s = None if args.skip_build else measure_build(args.base_image)
    if build_s is not None:
        log(f"image build (no layer cache): {build_s:.1f} s")
    start_times, echo_median, tag = asyncio.run(
        measure_runtime(args.base_image, args.starts, args.echoes)
    )
    size = docker_client().images.get(tag).attrs["Size"]
    result = {
        "start_cached_s": round(statistics.median(start_times), 3),
        "start_cached_all_s": [round(value, 3) for value in start_times],
        "echo_ms_median": round(echo_median, 2),
        "image_build_s": None if build_s is None else round(build_s, 1),
        "image_mb": round(size / 1_048_576, 1),
        "image": tag,
        "base_image": args.base_image,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

# The workbench app in a container, for headless runs that start sibling sandbox containers.
#
# Nothing is downloaded inside the build (many networks cannot verify TLS from a container):
# the wheels come in the build context, made on the host by scripts/app-image, which also
# picks the base image, skips the build when the image of this source exists, and runs
# `docker build`. By hand (host Python = image Python):
#   python3 -m pip wheel --wheel-dir ctx/wheels . && mkdir ctx/app
#   mv ctx/wheels/workbench-*.whl ctx/app/
#   docker build -f Dockerfile --build-arg BASE_IMAGE=workbench-base:bookworm -t workbench ctx
#
# Run (paths for the sandbox are HOST paths: the engine resolves them, not this container):
#   docker run --rm -v /var/run/docker.sock:/var/run/docker.sock -v wb-state:/state \
#     -e WORKSPACE_BASE=$PWD -e SANDBOX_USER_ID=$(id -u) -e SANDBOX_VOLUMES=$HOME/data:/data:ro \
#     -e LLM_MODEL=... -e LLM_API_KEY=... workbench --headless -t "..."
# See docs/docker.md and docs/kubernetes.md.

ARG BASE_IMAGE=workbench-base:bookworm

# The dependencies (resolved on the host: installed as they are, no resolver) in a stage of
# their own, so that Docker reuses it when only workbench itself changed; the wheels the
# sandbox image needs are kept in the venv for building that image offline.
FROM ${BASE_IMAGE} AS deps
COPY wheels /wheels
RUN python3 -m venv /opt/workbench \
 && /opt/workbench/bin/python -m pip install --no-index --no-deps --no-cache-dir \
        --disable-pip-version-check --progress-bar off /wheels/*.whl \
 && /opt/workbench/bin/python -m pip download --no-index --find-links /wheels \
        --disable-pip-version-check --dest /opt/workbench/sandbox-wheels \
        pydantic h11 pexpect jupyter_client ipykernel charset_normalizer mcp numpy pandas matplotlib

FROM ${BASE_IMAGE}
COPY --from=deps /opt/workbench /opt/workbench
COPY app /tmp/app
RUN /opt/workbench/bin/python -m pip install --no-index --no-deps --no-cache-dir \
        --disable-pip-version-check --progress-bar off /tmp/app/*.whl \
 && rm -rf /tmp/app
# WORKBENCH_WHEELS: the sandbox image is built from these wheels, offline (same Python as
# this image's when the sandbox uses the same base image, the default).
# WORKBENCH_SANDBOX_NETWORK: the allowlist proxy's socket is bound into the sandbox from this
# container, which the engine cannot see; here the sandbox's network is "on" (as before the
# policy existed) unless the person sets it (docs/security.md, "The network").
ENV PATH=/opt/workbench/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1 \
    WORKBENCH_IN_DOCKER=1 \
    WORKBENCH_WHEELS=/opt/workbench/sandbox-wheels \
    WORKBENCH_CONFIG_DIR=/state/config \
    WORKBENCH_DATA_DIR=/state/data \
    WORKBENCH_CACHE_DIR=/state/cache \
    WORKBENCH_SANDBOX_NETWORK=on \
    RUNTIME=docker
VOLUME /state
WORKDIR /state
ENTRYPOINT ["workbench"]
CMD ["--help"]

# Your own plugins in kubesched's image: FROM the kubesched image, pip install a plugin package
# whose entry points (group "kubesched.plugins") name its plugins. The build context is the package.
#
#   docker build -f deploy/plugins.Dockerfile --build-arg KUBESCHED_IMAGE=registry.example.com/kubesched:0.1.0 \
#     -t registry.example.com/kubesched-myplugins:0.1.0 path/to/your/plugin-package
#
# Then set the chart's image.repository/image.tag to it and enable the plugins in a profile.
ARG KUBESCHED_IMAGE=kubesched:0.1.0
FROM ${KUBESCHED_IMAGE}
ARG PIP_CERT=/etc/ssl/certs/ca-certificates.crt
USER 0:0
COPY . /tmp/plugin-package
# A package with dependencies of its own should pin them; `pip check` fails the build if they
# clash with kubesched's pinned set. Bytecode is compiled now: the root filesystem is read-only later.
RUN PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 pip install --quiet /tmp/plugin-package \
 && pip check \
 && rm -rf /tmp/plugin-package \
 && python -m compileall -q /opt/kubesched
USER 65532:65532

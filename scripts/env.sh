# Sourced by run.sh and test.sh: install Debian packages that are missing and keep the project's
# virtual environment (.venv, created once, reused after) up to date with pyproject.toml.
# Works whatever `python3` is: a PEP 668 "externally managed" Debian/Ubuntu Python never gets pip
# installs; everything goes into .venv.

apt_install() {  # apt_install PKG... : install the Debian packages given (root or sudo)
  [ $# -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "odradek: installing Debian packages: $*" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

python_for_venv() {  # the interpreter to build .venv from: python3 if it is 3.11+, else python3.11+
  local py
  for py in python3 python3.13 python3.12 python3.11; do
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "odradek: needs Python 3.11 or newer (python3 is $(python3 --version 2>&1))" >&2
  return 1
}

ensure_venv() {  # ensure_venv EXTRAS : .venv exists and has the package installed with those extras
  local extras="$1" py stamp want
  py=$(python_for_venv) || exit 1
  if [ ! -x .venv/bin/python ]; then
    if ! "$py" -m venv .venv >/dev/null 2>&1; then
      # Debian/Ubuntu ship venv's ensurepip separately (python3-venv / python3.X-venv).
      rm -rf .venv
      local ver
      ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
      apt_install "python${ver}-venv" || apt_install python3-venv
      "$py" -m venv .venv
    fi
  fi
  stamp=.venv/.odradek-installed
  want="$extras $(sha256sum pyproject.toml | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "odradek: installing the package and its [$extras] extras into .venv (a minute or two the first time)" >&2
    .venv/bin/python -m pip install -q --upgrade pip
    # one line per package as pip collects it, so a first install is not a silent minute; pip's errors
    # go to stderr untouched, and pipefail (set by the callers) keeps its exit status
    .venv/bin/python -m pip install --progress-bar off -e ".[$extras]" |
      { grep --line-buffered -E '^(Collecting|Successfully installed)' | sed -u 's/^/odradek:   /' || true; } >&2
    echo "$want" > "$stamp"
  fi
  export PATH="$PWD/.venv/bin:$PATH"
}

tools_hint() {
  echo "odradek: the tools are in .venv/bin; to use them from a shell: source .venv/bin/activate" >&2
}

fetch_jars() {  # fetch_jars POM DIR : the runtime jars of POM's dependencies, copied into DIR/libs once
  local pom="$1" dir="$2"
  [ -f "$dir/.complete" ] && return 0
  echo "odradek: fetching the jars of $pom from Maven Central into $dir (once)" >&2
  rm -rf "$dir"
  mkdir -p "$dir/libs"
  mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dir/libs" >&2
  touch "$dir/.complete"
}

kafka_jars() {  # kafka_jars : Apache Kafka's jars (tests/jvm/pom.xml; Kafka 2.x's tools, tests/jvm/kafka2/pom.xml)
  # and the Java test programs, fetched and built once into $ODRADEK_CACHE (default ~/.cache/odradek); the tests
  # find them through ODRADEK_KAFKA_HOME and ODRADEK_KAFKA2_HOME.
  local version version2 cache home home2
  version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' tests/jvm/pom.xml)
  version2=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' tests/jvm/kafka2/pom.xml)
  cache="${ODRADEK_CACHE:-$HOME/.cache/odradek}"
  home="$cache/apache-kafka-$version"
  home2="$cache/apache-kafka-$version2"
  fetch_jars tests/jvm/pom.xml "$home"
  fetch_jars tests/jvm/kafka2/pom.xml "$home2"
  fetch_jars tests/jvm/logging/pom.xml "$home/logging"  # a log binding for the Streams applications' JVMs
  # the tool runner and the Java test programs (tests/jvm/*.java), built once per version of their sources
  # (tests/jvm/apache_kafka.py finds the build of its checkout by the same hash)
  local sum
  sum=$(printf '%s\n' tests/jvm/*.java | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
  if [ ! -f "$home/runner-$sum/ToolRunner.class" ]; then
    rm -rf "$home/runner-$sum.tmp"
    mkdir -p "$home/runner-$sum.tmp"
    javac -nowarn -d "$home/runner-$sum.tmp" -cp "$home/libs/*" tests/jvm/*.java
    rm -rf "$home/runner-$sum"
    mv "$home/runner-$sum.tmp" "$home/runner-$sum"
  fi
  export ODRADEK_KAFKA_HOME="$home" ODRADEK_KAFKA2_HOME="$home2"
}

librdkafka_tests() {  # librdkafka_tests : librdkafka's own test program (tests/test-runner), built once into
  # $ODRADEK_CACHE/librdkafka-VERSION from the librdkafka release source that npm's @confluentinc/kafka-javascript
  # ships (deps/librdkafka, with its tests/ directory); tests/integration/test_librdkafka_share_suite.py runs its
  # share-consumer tests against Odradek and finds it through ODRADEK_LIBRDKAFKA_HOME.
  local version=2.15.0 npm_package=@confluentinc/kafka-javascript@1.10.0 cache home tmp need=() pkg
  cache="${ODRADEK_CACHE:-$HOME/.cache/odradek}"
  home="$cache/librdkafka-$version"
  export ODRADEK_LIBRDKAFKA_HOME="$home"
  [ -f "$home/.complete" ] && return 0
  command -v npm >/dev/null 2>&1 || need+=(npm)
  for pkg in build-essential pkg-config libssl-dev zlib1g-dev libzstd-dev python3; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  apt_install "${need[@]}"
  echo "odradek: building librdkafka $version and its test program from $npm_package (npm) into $home (once, a few minutes)" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$npm_package" >/dev/null && tar xzf ./*.tgz package/deps/librdkafka)
  if ! grep -q "^#define RD_KAFKA_VERSION 0x$(printf '%02x%02x%02x' ${version//./ })ff" \
      "$tmp/package/deps/librdkafka/src/rdkafka.h"; then
    echo "odradek: $npm_package does not ship librdkafka $version" >&2
    rm -rf "$tmp"
    return 1
  fi
  rm -rf "$home"
  mkdir -p "$cache"
  mv "$tmp/package/deps/librdkafka" "$home"
  rm -rf "$tmp"
  # what the share-consumer tests need (all compression codecs, lz4 the bundled one); no Kerberos, no HTTP client (OIDC)
  (cd "$home" && ./configure --disable-gssapi --disable-curl --disable-lz4-ext >odradek-configure.log 2>&1 &&
     make -j"$(nproc)" libs >odradek-make.log 2>&1 && make -j"$(nproc)" -C tests build >>odradek-make.log 2>&1) || {
    echo "odradek: building librdkafka failed, see $home/odradek-configure.log and $home/odradek-make.log" >&2
    return 1
  }
  touch "$home/.complete"
}

confluent_python_tests() {  # confluent_python_tests : confluent-kafka-python's tests/ directory of its v2.15.0 tag,
  # fetched once from GitHub into $ODRADEK_CACHE/confluent-kafka-python-2.15.0; tests/schema_registry/
  # test_confluent_python_suite.py runs its schema registry integration tests against Odradek's registry
  local version=2.15.0 cache home tmp
  cache="${ODRADEK_CACHE:-$HOME/.cache/odradek}"
  home="$cache/confluent-kafka-python-$version"
  [ -f "$home/.complete" ] && return 0
  echo "odradek: fetching confluent-kafka-python $version's tests from GitHub into $home (once)" >&2
  tmp=$(mktemp -d)
  curl -fsSL "https://github.com/confluentinc/confluent-kafka-python/archive/refs/tags/v$version.tar.gz" |
    tar xz -C "$tmp" "confluent-kafka-python-$version/tests" || { rm -rf "$tmp"; return 1; }
  rm -rf "$home"
  mkdir -p "$home"
  mv "$tmp/confluent-kafka-python-$version/tests" "$home/tests"
  rm -rf "$tmp"
  touch "$home/.complete"
}

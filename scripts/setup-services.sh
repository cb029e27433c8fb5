#!/usr/bin/env bash
# Makes sure every service the tests need answers, installing and starting
# what is missing. Idempotent: a service that already answers is left alone.
#
#   bash scripts/setup-services.sh
#
# Addresses follow the environment variables the tests read (DATABASE_URL,
# AMQP_URL, MONGODB_URL, SQS_ENDPOINT); only local defaults are started here.
# MongoDB and SQS are test stand-ins from PyPI (SecantusDB, moto), installed
# into one virtualenv under $TIDINGS_SERVICES_DIR (default
# ~/.cache/tidings-services) and started in the background; their PIDs and
# logs are kept there.
set -euo pipefail

log() { printf 'setup-services: %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  local port=$1 seconds=$2
  for _ in $(seq 1 $((seconds * 10))); do
    port_open "$port" && return 0
    sleep 0.1
  done
  return 1
}

apt_install() {
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

postgres() {
  if port_open 5432; then log "postgresql answers on 5432"; return; fi
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then apt_install postgresql; fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  log "starting postgresql $version"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_port 5432 30 || { log "postgresql did not start"; exit 1; }
}

rabbitmq() {
  if port_open 5672; then log "rabbitmq answers on 5672"; return; fi
  command -v rabbitmq-server >/dev/null || apt_install rabbitmq-server
  log "starting rabbitmq"
  rabbitmq-server -detached || true
  rabbitmqctl await_startup >/dev/null 2>&1 || true
  wait_port 5672 60 || { log "rabbitmq did not start"; exit 1; }
}

SERVICES_DIR=${TIDINGS_SERVICES_DIR:-$HOME/.cache/tidings-services}
VENV=$SERVICES_DIR/venv
SECANTUS_VERSION=0.7.0b3
MOTO_VERSION=5.2.5

stand_ins() {
  local stamp=$VENV/.installed-$SECANTUS_VERSION-$MOTO_VERSION
  [ -f "$stamp" ] && return
  log "installing SecantusDB $SECANTUS_VERSION and moto $MOTO_VERSION into $VENV"
  mkdir -p "$SERVICES_DIR"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "SecantusDB==$SECANTUS_VERSION" "moto[server]==$MOTO_VERSION"
  touch "$stamp"
}

# start_background NAME PORT SECONDS COMMAND...: starts COMMAND detached,
# records its PID, waits for PORT.
start_background() {
  local name=$1 port=$2 seconds=$3
  shift 3
  log "starting $name on $port"
  setsid nohup "$@" >"$SERVICES_DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$SERVICES_DIR/$name.pid"
  wait_port "$port" "$seconds" || { log "$name did not start; see $SERVICES_DIR/$name.log"; exit 1; }
}

mongodb() {
  if port_open 27017; then log "mongodb answers on 27017"; return; fi
  start_background secantusdb 27017 30 \
    "$VENV/bin/secantusd-py" --host 127.0.0.1 --port 27017 --storage-path :memory:
}

sqs() {
  if port_open 4566; then log "sqs answers on 4566"; return; fi
  start_background moto 4566 60 "$VENV/bin/moto_server" -H 127.0.0.1 -p 4566
}

postgres
rabbitmq
# Installed even when both ports answer: fault tests start private servers
# of their own from this virtualenv.
stand_ins
mongodb
sqs
log "all services answer"

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

# --- PgBouncer ---------------------------------------------------------------
# A private PgBouncer (Debian's, 1.18) in transaction mode on 127.0.0.1:6432,
# forwarding to the PostgreSQL on 127.0.0.1:5432: the pooler tests and the
# bench's pooled drain reach the server through it (PGBOUNCER_URL, default
# postgres://postgres@127.0.0.1:6432/test). 1.18 has no prepared-statement
# support in transaction mode: the production case the PostgreSQL store's
# `Pooling::Transaction` is made for. Its config and auth file are kept in
# $SERVICES_DIR/pgbouncer; as PgBouncer will not run as root, it runs as
# postgres where started by root, and writes its PID file and log where that
# user may, under /run/postgresql. Stop it with
# `kill "$(cat /run/postgresql/tidings-pgbouncer.pid)"`.
# `ignore_startup_parameters = extra_float_digits`, as in most production
# setups: sqlx sends that parameter when it connects. `admin_users = postgres`
# lets tests count the clients of a pool (`SHOW CLIENTS` on the `pgbouncer`
# console database).
PGBOUNCER_DIR=$SERVICES_DIR/pgbouncer

pgbouncer_service() {
  if port_open 6432; then log "pgbouncer answers on 6432"; return; fi
  [ -x /usr/sbin/pgbouncer ] || apt_install pgbouncer
  local run_dir=$PGBOUNCER_DIR user=()
  if [ "$(id -u)" = 0 ]; then
    run_dir=/run/postgresql
    mkdir -p "$run_dir"
    chown postgres "$run_dir"
    user=(-u postgres)
  fi
  mkdir -p "$PGBOUNCER_DIR"
  cat >"$PGBOUNCER_DIR/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = 6432
unix_socket_dir =
auth_type = trust
auth_file = $PGBOUNCER_DIR/userlist.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
log_connections = 0
log_disconnections = 0
admin_users = postgres
pidfile = $run_dir/tidings-pgbouncer.pid
logfile = $run_dir/tidings-pgbouncer.log
INI
  printf '"postgres" ""\n"root" ""\n' >"$PGBOUNCER_DIR/userlist.txt"
  log "starting pgbouncer on 6432"
  # Reads its config, then becomes postgres and goes to the background.
  /usr/sbin/pgbouncer -d "${user[@]}" "$PGBOUNCER_DIR/pgbouncer.ini"
  wait_port 6432 10 || { log "pgbouncer did not start; see $run_dir/tidings-pgbouncer.log"; exit 1; }
}
# --- end PgBouncer -----------------------------------------------------------

postgres
rabbitmq
# Installed even when both ports answer: fault tests start private servers
# of their own from this virtualenv.
stand_ins
mongodb
sqs
pgbouncer_service
log "all services answer"

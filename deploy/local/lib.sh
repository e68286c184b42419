# Shell shared by the local stacks: deploy/local/run.sh (`make run`, one box) and
# deploy/local/run-fleet.sh (`make run-fleet`, a fleet of regional data planes). Source it
# after setting:
#   root   the repository root (the working directory)
#   BIN    where the binaries are (make build puts them in bin/)
#   DATA   the stack's state directory (created; Postgres, secrets, spools, logs)
#   TAG    the prefix of log lines, e.g. run
# It defines functions only; nothing runs on sourcing.

mkdir -p "$DATA/logs"
DATA=$(cd "$DATA" && pwd)
pids=()
opt_pids=() # helpers the stack can do without (start_optional)

log() { printf '[%s] %s\n' "$TAG" "$*"; }

# write_private FILE: writes stdin to FILE readable by its owner only (mode 0600), an
# existing FILE included (a plain redirect keeps an existing file's mode).
write_private() {
  ( umask 077; : >"$1"; chmod 600 "$1"; cat >"$1" )
}

# start NAME CMD...: runs CMD in the background with its output appended to
# $DATA/logs/NAME.log, after a line that marks the start.
start() {
  local name=$1
  shift
  printf '\n===== %s started %s =====\n' "$name" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$DATA/logs/$name.log"
  # In a session of its own, so a Ctrl-C reaches only this script, which stops everything
  # in order (stop_all) and exits quietly, rather than every process at once.
  setsid "$@" >>"$DATA/logs/$name.log" 2>&1 &
  pids+=($!)
}

# start_optional NAME CMD...: start for a helper the stack can do without (Prometheus,
# Grafana): stopped with the rest, but its exit does not stop the stack (supervise).
start_optional() {
  start "$@"
  opt_pids+=("${pids[-1]}")
  unset 'pids[-1]'
}

# console_operator: the console's operator demo (admin role) with a password kept in
# $DATA/secrets.env as CONSOLE_PASSWORD, made once; needs GATEWAY_ADMIN_URL and _TOKEN.
console_operator() {
  if [ -z "${CONSOLE_PASSWORD:-}" ]; then
    CONSOLE_PASSWORD="console_$(head -c12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    ( umask 077; echo "CONSOLE_PASSWORD=$CONSOLE_PASSWORD" >>"$DATA/secrets.env" )
  fi
  if ! ctl --json operators list | grep -q '"name": *"demo"'; then
    printf '%s\n' "$CONSOLE_PASSWORD" | ctl operators create demo --role admin >/dev/null
  fi
}

# stop_all [SIGNAL] ends every process start began with SIGNAL (TERM unless given), the
# last started first, then Postgres. A Ctrl-C passes INT on, so the planes skip their
# shutdown delay as they do when interrupted by hand; SIGTERM keeps it.
stop_all() {
  local sig=${1:-TERM}
  trap - INT TERM EXIT
  log "stopping"
  local p
  for p in "${opt_pids[@]}"; do kill -"$sig" "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  # The last started first: data planes hand their spooled usage to the control plane
  # before it stops.
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -"$sig" "${pids[$i]}" 2>/dev/null || true
    wait "${pids[$i]}" 2>/dev/null || true
  done
  if [ -n "${PGDATA:-}" ]; then as_pg "$pg_bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true; fi
  log "stopped"
}

# on_exit_stop_all: Ctrl-C (passed on as INT), SIGTERM and any exit stop everything that
# was started.
on_exit_stop_all() {
  trap stop_all EXIT
  trap 'stop_all INT; exit 0' INT
  trap 'stop_all TERM; exit 0' TERM
}

# postgres PORT: a Postgres cluster in $DATA/pg (created on first use) listening on
# 127.0.0.1:PORT, with the database gateway, its owner gateway and the runtime role
# gateway_app (a member of gateway_runtime, which cannot rewrite the ledger or balances;
# controlplane/store migration 008 grants its rights). Installs the Debian package when run
# as root without one. Sets pg_bin and PGDATA.
postgres() {
  local port=$1 d
  pg_bin=""
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do pg_bin=$d; break; done
  if [ -z "$pg_bin" ] && command -v initdb >/dev/null 2>&1; then pg_bin=$(dirname "$(command -v initdb)"); fi
  if [ -z "$pg_bin" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing PostgreSQL (Debian package postgresql)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do pg_bin=$d; break; done
  fi
  [ -n "$pg_bin" ] || { echo "PostgreSQL server binaries not found; install the 'postgresql' package" >&2; exit 1; }

  # initdb refuses root: run the cluster as the postgres system user when we are root.
  as_pg() { "$@"; }
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir "$DATA" --shell /usr/sbin/nologin postgres
    as_pg() { runuser -u postgres -- "$@"; }
    # The postgres user must be able to reach the data directory.
    chmod o+x "$root" "$(dirname "$DATA")" "$DATA" 2>/dev/null || true
  fi

  PGDATA="$DATA/pg"
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    log "initialising Postgres cluster in $PGDATA"
    mkdir -p "$PGDATA"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$PGDATA"; fi
    chmod 700 "$PGDATA"
    as_pg "$pg_bin/initdb" -D "$PGDATA" -U gateway --auth=trust -E UTF8 >"$DATA/logs/initdb.log"
  fi
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$DATA/logs" && touch "$DATA/logs/postgres.log" && chown postgres: "$DATA/logs/postgres.log"
  fi

  log "starting Postgres on 127.0.0.1:$port"
  as_pg "$pg_bin/pg_ctl" -D "$PGDATA" -w -l "$DATA/logs/postgres.log" \
    -o "-p $port -c listen_addresses=127.0.0.1 -k $PGDATA" start >/dev/null
  as_pg "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U gateway -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname='gateway'" | grep -q 1 ||
    as_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$port" -U gateway gateway
  as_pg "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U gateway -d postgres -v ON_ERROR_STOP=1 -qtAc "
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gateway_runtime') THEN CREATE ROLE gateway_runtime NOLOGIN; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gateway_app') THEN CREATE ROLE gateway_app LOGIN IN ROLE gateway_runtime; END IF;
END \$\$;" >/dev/null
}

# secrets: tokens kept across runs in $DATA/secrets.env (ADMIN_TOKEN, NODE_TOKEN,
# WEBHOOK_SECRET), written to files for the binaries (never on a command line), and the
# snapshot signing key pair ($DATA/snapshot-signing.pem, .pub).
secrets() {
  local f="$DATA/secrets.env"
  rnd() { head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
  if [ ! -s "$f" ]; then
    ( umask 077; printf 'ADMIN_TOKEN=%s\nNODE_TOKEN=%s\nWEBHOOK_SECRET=%s\n' "adm_$(rnd)" "node_$(rnd)" "whsec_$(rnd)" >"$f" )
  fi
  # shellcheck disable=SC1090
  . "$f"
  if [ -z "${WEBHOOK_SECRET:-}" ]; then
    WEBHOOK_SECRET="whsec_$(rnd)"
    echo "WEBHOOK_SECRET=$WEBHOOK_SECRET" >>"$f"
  fi
  if [ -z "${TEST_BOX_TOKEN:-}" ]; then
    TEST_BOX_TOKEN="testbox_$(rnd)"
    echo "TEST_BOX_TOKEN=$TEST_BOX_TOKEN" >>"$f"
  fi
  ( umask 077
    printf '%s\n' "$ADMIN_TOKEN" >"$DATA/admin.token"
    printf '%s\n' "$NODE_TOKEN" >"$DATA/node.tokens"
    printf '%s\n' "$NODE_TOKEN" >"$DATA/node.token" )
  if [ ! -s "$DATA/snapshot-signing.pem" ] || [ ! -s "$DATA/snapshot-signing.pub" ]; then
    rm -f "$DATA/snapshot-signing.pem" "$DATA/snapshot-signing.pub"
    log "generating the snapshot signing key pair"
    "$BIN/gatewayctl" snapshot keygen --private-key-file "$DATA/snapshot-signing.pem" --public-key-file "$DATA/snapshot-signing.pub" >/dev/null
  fi
}

# controlplane PG_PORT NODE_PORT ADMIN_PORT OPS_PORT [FLAG...]: starts the control plane
# on the cluster of postgres, with the secrets' tokens and key; further flags and GATEWAY_*
# variables of the caller's environment pass through.
controlplane() {
  local pg=$1 node=$2 admin=$3 ops=$4
  shift 4
  log "starting control plane on 127.0.0.1:$node (admin API on 127.0.0.1:$admin)"
  start controlplane env -u GATEWAY_ADMIN_TOKEN -u GATEWAY_NODE_TOKENS GOGC=400 \
    GATEWAY_DATABASE_URL="postgres://gateway_app@127.0.0.1:$pg/gateway?sslmode=disable" \
    GATEWAY_MIGRATE_DATABASE_URL="postgres://gateway@127.0.0.1:$pg/gateway?sslmode=disable" \
    GATEWAY_ADMIN_TOKEN_FILE="$DATA/admin.token" GATEWAY_NODE_TOKENS_FILE="$DATA/node.tokens" \
    GATEWAY_SNAPSHOT_SIGNING_KEY_FILE="$DATA/snapshot-signing.pem" \
    "$BIN/controlplane" --listen "127.0.0.1:$node" --admin-listen "127.0.0.1:$admin" --ops-listen "127.0.0.1:$ops" \
    --default-limits-file configs/limits.default.yaml "$@"
}

# dataplane LOG NODE_ID DIR PORT OPS_PORT CP_PORT [FLAG...]: starts a data plane with its
# snapshot and spool in DIR on 127.0.0.1:PORT, its output in $DATA/logs/LOG.log.
dataplane() {
  local name=$1 id=$2 dir=$3 port=$4 ops=$5 cp=$6
  shift 6
  log "starting data plane $id on 127.0.0.1:$port"
  mkdir -p "$dir"
  start "$name" env -u GATEWAY_NODE_TOKEN GODEBUG=schedtrace=2147483647 GATEWAY_NODE_TOKEN_FILE="$DATA/node.token" \
    GATEWAY_SNAPSHOT_PUBLIC_KEY_FILE="$DATA/snapshot-signing.pub" \
    "$BIN/dataplane" --listen "127.0.0.1:$port" --control-plane-url "http://127.0.0.1:$cp" \
    --node-id "$id" --data-dir "$dir" --ops-listen "127.0.0.1:$ops" "$@"
}

# wait_for URL NAME: waits up to 30 s for URL to answer 2xx.
wait_for() {
  for _ in $(seq 1 150); do
    if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "$2 did not answer at $1; see $DATA/logs/" >&2
  exit 1
}

# ctl runs gatewayctl against the admin API (GATEWAY_ADMIN_URL, GATEWAY_ADMIN_TOKEN).
ctl() { "$BIN/gatewayctl" "$@"; }

# load_catalog FILE SED_SCRIPT: loads a catalogue whose simulator ports SED_SCRIPT rewrites.
load_catalog() {
  log "loading catalogue $1"
  sed "$2" "$1" >"$DATA/catalog.yaml"
  ctl catalog load "$DATA/catalog.yaml" >/dev/null
}

# demo_account NAME CUSTOMER RESIDENCY: an account with 500 SEK, every model of the
# catalogue enabled and a key, kept in $DATA/NAME.account and $DATA/NAME.key across runs.
demo_account() {
  local name=$1 customer=$2 residency=$3 acct models
  if [ ! -s "$DATA/$name.account" ] || ! ctl accounts get "$(cat "$DATA/$name.account")" >/dev/null 2>&1; then
    log "creating demo account $customer (residency $residency)"
    ctl --json accounts create --customer "$customer" --residency "$residency" |
      sed -n 's/.*"id": *"\(acct_[0-9a-f]*\)".*/\1/p' | head -n1 >"$DATA/$name.account"
    acct=$(cat "$DATA/$name.account")
    ctl credit "$acct" 500 --note "demo credit" >/dev/null
    # Route IDs start with "sim-" in the demo catalogues: keep model IDs only.
    models=$(ctl --json models list | grep -o '"id": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' | grep -v '^route\|^sim' | sort -u)
    # shellcheck disable=SC2086
    ctl models enable "$acct" $models >/dev/null
    ctl --json keys create "$acct" --name demo 2>/dev/null | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p' >"$DATA/$name.key"
  fi
}

# wait_for_key URL KEY: waits up to 10 s until the data plane at URL answers KEY with
# anything but 401 (its snapshot holds the key, or lists it as served elsewhere).
wait_for_key() {
  local code
  for _ in $(seq 1 50); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $2" "$1/v1/models")
    [ "$code" != 401 ] && [ "$code" != 503 ] && [ "$code" != 000 ] && return 0
    sleep 0.2
  done
}

# grafana_stack PROM_PORT GRAFANA_PORT CP_OPS DP_OPS...: Prometheus on 127.0.0.1:PROM_PORT
# scraping the control plane's ops listener CP_OPS and the data planes' DP_OPS (host:port),
# and Grafana on 127.0.0.1:GRAFANA_PORT with the gateway dashboard provisioned
# (deploy/grafana: its provisioning folder is copied to $DATA/grafana/provisioning), each
# started when its binary is on PATH (prometheus; grafana or grafana-server; Grafana's
# home folder GATEWAY_GRAFANA_HOME, default /usr/share/grafana), else how to start it is
# printed. Anonymous visitors see the dashboards; the Grafana admin password is
# GRAFANA_PASSWORD in $DATA/secrets.env.
grafana_stack() {
  local prom=$1 graf=$2 cp=$3 dir="$DATA/grafana" t targets=""
  shift 3
  for t in "$@"; do targets="$targets${targets:+, }'$t'"; done
  mkdir -p "$dir/provisioning" "$dir/data" "$dir/logs" "$dir/plugins"
  cp -R "$root/deploy/grafana/provisioning/." "$dir/provisioning/"
  cat >"$DATA/prometheus.yml" <<PROM
# Written by deploy/local (grafana_stack): the local stack's ops listeners.
global:
  scrape_interval: 15s
scrape_configs:
  - job_name: controlplane
    static_configs:
      - targets: ['$cp']
  - job_name: dataplane
    static_configs:
      - targets: [$targets]
PROM
  if [ -z "${GRAFANA_PASSWORD:-}" ]; then
    GRAFANA_PASSWORD="grafana_$(head -c12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    ( umask 077; echo "GRAFANA_PASSWORD=$GRAFANA_PASSWORD" >>"$DATA/secrets.env" )
  fi
  local -a genv=(GF_SERVER_HTTP_ADDR=127.0.0.1 GF_SERVER_HTTP_PORT="$graf" GF_PATHS_PROVISIONING="$dir/provisioning"
    GF_PATHS_DATA="$dir/data" GF_PATHS_LOGS="$dir/logs" GF_PATHS_PLUGINS="$dir/plugins"
    GF_AUTH_ANONYMOUS_ENABLED=true GF_AUTH_ANONYMOUS_ORG_ROLE=Viewer GF_SECURITY_ADMIN_PASSWORD="$GRAFANA_PASSWORD"
    GATEWAY_PROMETHEUS_URL="http://127.0.0.1:$prom" GATEWAY_GRAFANA_DASHBOARDS="$root/deploy/grafana")
  local -a gbin=()
  if command -v grafana >/dev/null 2>&1; then gbin=(grafana server); elif command -v grafana-server >/dev/null 2>&1; then gbin=(grafana-server); fi
  local home=${GATEWAY_GRAFANA_HOME:-/usr/share/grafana}
  if command -v prometheus >/dev/null 2>&1; then
    log "starting Prometheus on 127.0.0.1:$prom"
    start_optional prometheus prometheus --config.file "$DATA/prometheus.yml" --web.listen-address "127.0.0.1:$prom" \
      --storage.tsdb.path "$DATA/prometheus"
  else
    log "no prometheus on PATH; to scrape the stack: prometheus --config.file $DATA/prometheus.yml --web.listen-address 127.0.0.1:$prom --storage.tsdb.path $DATA/prometheus"
  fi
  if [ ${#gbin[@]} -gt 0 ]; then
    log "starting Grafana on 127.0.0.1:$graf (dashboard: Gateway / sekgate gateway)"
    start_optional grafana env "${genv[@]}" "${gbin[@]}" --homepath "$home"
  else
    log "no grafana on PATH; with Grafana 10+ installed, the provisioned dashboard is at http://127.0.0.1:$graf/d/sekgate-gateway after:"
    log "  set -a; . $DATA/secrets.env; set +a"
    log "  env ${genv[*]:0:8} GF_SECURITY_ADMIN_PASSWORD=\"\$GRAFANA_PASSWORD\" ${genv[*]:9} grafana server --homepath $home"
  fi
}

# supervise stays in the foreground until Ctrl-C or SIGTERM, and stops everything when any
# started process dies.
supervise() {
  while :; do
    for p in "${pids[@]}"; do
      if ! kill -0 "$p" 2>/dev/null; then log "process $p exited; see $DATA/logs/"; exit 1; fi
    done
    sleep 1 &
    wait $! || true
  done
}

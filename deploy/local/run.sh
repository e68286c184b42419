#!/usr/bin/env bash
# Local stack for `make run`: a Postgres cluster under .data/, the control plane, one data
# plane, the provider simulator and a demo account. Stays in the foreground until Ctrl-C or
# SIGTERM, then stops everything it started, Postgres included. Running it again reuses .data/.
#
# Ports (override by environment):
#   GATEWAY_PG_PORT   (5433)  local Postgres
#   GATEWAY_DP_PORT   (8080)  data plane, the public {base_url}
#   GATEWAY_CP_PORT   (8081)  control plane's node-facing listener (internal API)
#   GATEWAY_ADMIN_PORT (8082) control plane's admin API listener
#   GATEWAY_SIM_PORT  (8090)  provider simulator
#   GATEWAY_PAY_PORT  (12111) stripe-mock, the payment API's test double for local top-ups
#   GATEWAY_PAY_HTTPS_PORT (12112) stripe-mock's HTTPS listener (loopback only; unused)
#   GATEWAY_OPS_PORT  (9108)  data plane's private /metrics and /readyz
#   GATEWAY_CP_OPS_PORT (9109) control plane's private /metrics, /livez and /readyz
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
BIN=${BIN:-bin}
DATA=${GATEWAY_LOCAL_DATA:-.data}
PG_PORT=${GATEWAY_PG_PORT:-5433}
DP_PORT=${GATEWAY_DP_PORT:-8080}
CP_PORT=${GATEWAY_CP_PORT:-8081}
ADMIN_PORT=${GATEWAY_ADMIN_PORT:-8082}
SIM_PORT=${GATEWAY_SIM_PORT:-8090}
PAY_PORT=${GATEWAY_PAY_PORT:-12111}
PAY_HTTPS_PORT=${GATEWAY_PAY_HTTPS_PORT:-12112}
OPS_PORT=${GATEWAY_OPS_PORT:-9108}
CP_OPS_PORT=${GATEWAY_CP_OPS_PORT:-9109}
CATALOG=${GATEWAY_CATALOG:-configs/catalog.demo.yaml}

mkdir -p "$DATA/logs"
DATA=$(cd "$DATA" && pwd)
log() { printf '[run] %s\n' "$*"; }

# --- Postgres binaries --------------------------------------------------------------------
pg_bin=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do pg_bin=$d; break; done
if [ -z "$pg_bin" ] && command -v initdb >/dev/null 2>&1; then pg_bin=$(dirname "$(command -v initdb)"); fi
if [ -z "$pg_bin" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing PostgreSQL (Debian package postgresql)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do pg_bin=$d; break; done
  fi
fi
[ -n "$pg_bin" ] || { echo "PostgreSQL server binaries not found; install the 'postgresql' package" >&2; exit 1; }

# initdb refuses root: run the cluster as the postgres system user when we are root.
as_pg() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir "$DATA" --shell /usr/sbin/nologin postgres
  as_pg() { runuser -u postgres -- "$@"; }
  # The postgres user must be able to reach the data directory.
  chmod o+x "$root" "$DATA" 2>/dev/null || true
fi

PGDATA="$DATA/pg"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  log "initialising Postgres cluster in $PGDATA"
  mkdir -p "$PGDATA"
  [ "$(id -u)" = 0 ] && chown postgres: "$PGDATA"
  chmod 700 "$PGDATA"
  as_pg "$pg_bin/initdb" -D "$PGDATA" -U gateway --auth=trust -E UTF8 >"$DATA/logs/initdb.log"
fi
[ "$(id -u)" = 0 ] && chown postgres: "$DATA/logs" && touch "$DATA/logs/postgres.log" && chown postgres: "$DATA/logs/postgres.log"

pids=()
stop_all() {
  trap - INT TERM EXIT
  log "stopping"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  as_pg "$pg_bin/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
  log "stopped"
}
trap stop_all EXIT
trap 'stop_all; exit 0' INT TERM

log "starting Postgres on 127.0.0.1:$PG_PORT"
as_pg "$pg_bin/pg_ctl" -D "$PGDATA" -w -l "$DATA/logs/postgres.log" \
  -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PGDATA" start >/dev/null
as_pg "$pg_bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U gateway -d postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname='gateway'" | grep -q 1 ||
  as_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U gateway gateway
# Two roles: gateway (the cluster's bootstrap role) owns the schema and runs the migrations;
# the control plane serves as gateway_app, a member of gateway_runtime, which cannot
# rewrite the ledger or balances (controlplane/store migration 008 grants its rights).
as_pg "$pg_bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U gateway -d postgres -v ON_ERROR_STOP=1 -qtAc "
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gateway_runtime') THEN CREATE ROLE gateway_runtime NOLOGIN; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gateway_app') THEN CREATE ROLE gateway_app LOGIN IN ROLE gateway_runtime; END IF;
END \$\$;" >/dev/null

# --- Secrets kept across runs -------------------------------------------------------------
secrets="$DATA/secrets.env"
if [ ! -s "$secrets" ]; then
  umask 077
  rnd() { head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
  printf 'ADMIN_TOKEN=%s\nNODE_TOKEN=%s\nWEBHOOK_SECRET=%s\n' "adm_$(rnd)" "node_$(rnd)" "whsec_$(rnd)" >"$secrets"
fi
# shellcheck disable=SC1090
. "$secrets"
if [ -z "${CONSOLE_PASSWORD:-}" ]; then
  CONSOLE_PASSWORD="console_$(head -c12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  echo "CONSOLE_PASSWORD=$CONSOLE_PASSWORD" >>"$secrets"
fi
if [ -z "${WEBHOOK_SECRET:-}" ]; then
  WEBHOOK_SECRET="whsec_$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  echo "WEBHOOK_SECRET=$WEBHOOK_SECRET" >>"$secrets"
fi

# Tokens in files (never on a command line), the snapshot signing key pair.
( umask 077
  printf '%s\n' "$ADMIN_TOKEN" >"$DATA/admin.token"
  printf '%s\n' "$NODE_TOKEN" >"$DATA/node.tokens"
  printf '%s\n' "$NODE_TOKEN" >"$DATA/node.token" )
if [ ! -s "$DATA/snapshot-signing.pem" ] || [ ! -s "$DATA/snapshot-signing.pub" ]; then
  rm -f "$DATA/snapshot-signing.pem" "$DATA/snapshot-signing.pub"
  log "generating the snapshot signing key pair"
  "$BIN/gatewayctl" snapshot keygen --private-key-file "$DATA/snapshot-signing.pem" --public-key-file "$DATA/snapshot-signing.pub" >/dev/null
fi

# --- Processes ----------------------------------------------------------------------------
log "starting provider simulator on 127.0.0.1:$SIM_PORT"
"$BIN/simulator" --listen "127.0.0.1:$SIM_PORT" >"$DATA/logs/simulator.log" 2>&1 &
pids+=($!)

log "starting stripe-mock (payment API test double) on 127.0.0.1:$PAY_PORT"
[ -x "$BIN/stripe-mock" ] || go build -o "$BIN/stripe-mock" github.com/stripe/stripe-mock
# stripe-mock always opens an HTTPS listener too (on every interface at 12112 unless told
# otherwise): keep it on loopback at its own port so two local stacks never collide.
"$BIN/stripe-mock" -http-addr "127.0.0.1:$PAY_PORT" -https-addr "127.0.0.1:$PAY_HTTPS_PORT" >"$DATA/logs/stripe-mock.log" 2>&1 &
pids+=($!)

log "starting control plane on 127.0.0.1:$CP_PORT (admin API on 127.0.0.1:$ADMIN_PORT)"
env -u GATEWAY_ADMIN_TOKEN -u GATEWAY_NODE_TOKENS \
GATEWAY_DATABASE_URL="postgres://gateway_app@127.0.0.1:$PG_PORT/gateway?sslmode=disable" \
GATEWAY_MIGRATE_DATABASE_URL="postgres://gateway@127.0.0.1:$PG_PORT/gateway?sslmode=disable" \
GATEWAY_ADMIN_TOKEN_FILE="$DATA/admin.token" GATEWAY_NODE_TOKENS_FILE="$DATA/node.tokens" \
GATEWAY_SNAPSHOT_SIGNING_KEY_FILE="$DATA/snapshot-signing.pem" \
GATEWAY_STRIPE_SECRET_KEY=sk_test_local GATEWAY_STRIPE_API_BASE="http://127.0.0.1:$PAY_PORT" \
GATEWAY_STRIPE_WEBHOOK_SECRET="$WEBHOOK_SECRET" \
GATEWAY_TOPUP_SUCCESS_URL="http://127.0.0.1:$DP_PORT/docs?topup=done" \
GATEWAY_TOPUP_CANCEL_URL="http://127.0.0.1:$DP_PORT/docs?topup=cancelled" \
GATEWAY_SIGNUP_CONFIRM_URL="http://127.0.0.1:$DP_PORT/docs?signup=received" \
GATEWAY_SIGNUP_ERROR_URL="http://127.0.0.1:$DP_PORT/docs?signup=error" \
  "$BIN/controlplane" --listen "127.0.0.1:$CP_PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" --ops-listen "127.0.0.1:$CP_OPS_PORT" \
  --default-limits-file configs/limits.default.yaml --test-box-url "http://127.0.0.1:$DP_PORT" \
  >"$DATA/logs/controlplane.log" 2>&1 &
pids+=($!)

log "starting data plane on 127.0.0.1:$DP_PORT"
mkdir -p "$DATA/node"
env -u GATEWAY_NODE_TOKEN GATEWAY_NODE_TOKEN_FILE="$DATA/node.token" \
GATEWAY_SNAPSHOT_PUBLIC_KEY_FILE="$DATA/snapshot-signing.pub" \
  "$BIN/dataplane" --listen "127.0.0.1:$DP_PORT" --control-plane-url "http://127.0.0.1:$CP_PORT" \
  --node-id local-1 --data-dir "$DATA/node" --ops-listen "127.0.0.1:$OPS_PORT" --access-log-format text >"$DATA/logs/dataplane.log" 2>&1 &
pids+=($!)

wait_for() { # url, name
  for _ in $(seq 1 150); do
    if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "$2 did not answer at $1; see $DATA/logs/" >&2
  exit 1
}
wait_for "http://127.0.0.1:$SIM_PORT/healthz" simulator
wait_for "http://127.0.0.1:$CP_PORT/healthz" "control plane"
wait_for "http://127.0.0.1:$ADMIN_PORT/healthz" "control plane admin API"
wait_for "http://127.0.0.1:$DP_PORT/healthz" "data plane"

# --- Demo catalogue, account and key ------------------------------------------------------
export GATEWAY_ADMIN_URL="http://127.0.0.1:$ADMIN_PORT" GATEWAY_ADMIN_TOKEN="$ADMIN_TOKEN"
ctl() { "$BIN/gatewayctl" "$@"; }
log "loading catalogue $CATALOG"
sed "s#127.0.0.1:8090#127.0.0.1:$SIM_PORT#g" "$CATALOG" >"$DATA/catalog.yaml"
ctl catalog load "$DATA/catalog.yaml" >/dev/null

demo="$DATA/demo.account"
if [ ! -s "$demo" ] || ! ctl accounts get "$(cat "$demo")" >/dev/null 2>&1; then
  log "creating demo account"
  ctl --json accounts create --customer "Demo AB" --residency se | sed -n 's/.*"id": *"\(acct_[0-9a-f]*\)".*/\1/p' | head -n1 >"$demo"
  acct=$(cat "$demo")
  ctl credit "$acct" 500 --note "demo credit" >/dev/null
  models=$(ctl --json models list | grep -o '"id": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' | grep -v '^route\|^sim' | sort -u)
  # shellcheck disable=SC2086
  ctl models enable "$acct" $models >/dev/null
  ctl --json keys create "$acct" --name demo | sed -n 's/.*"secret": *"\([^"]*\)".*/\1/p' >"$DATA/demo.key"
fi
acct=$(cat "$demo")
key=$(cat "$DATA/demo.key")
# An operator for the console (admin role), made once with the admin token.
if ! ctl --json operators list | grep -q '"name": *"demo"'; then
  printf '%s\n' "$CONSOLE_PASSWORD" | ctl operators create demo --role admin >/dev/null
fi

cat >"$DATA/demo.env" <<ENV
GATEWAY_BASE_URL=http://127.0.0.1:$DP_PORT
GATEWAY_API_KEY=$key
GATEWAY_ACCOUNT_ID=$acct
GATEWAY_ADMIN_URL=http://127.0.0.1:$ADMIN_PORT
GATEWAY_ADMIN_TOKEN=$ADMIN_TOKEN
GATEWAY_WEBHOOK_SECRET=$WEBHOOK_SECRET
ENV

# Wait until the data plane has the key (snapshot push).
for _ in $(seq 1 50); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "http://127.0.0.1:$DP_PORT/v1/models")
  [ "$code" = 200 ] && break
  sleep 0.2
done

cat <<MSG

Gateway is up. Settings are in $DATA/demo.env (source it: set -a; . $DATA/demo.env; set +a).
Try:

  curl -s http://127.0.0.1:$DP_PORT/v1/chat/completions \\
    -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \\
    -d '{"model":"llama-3.1-8b-instruct","messages":[{"role":"user","content":"Hej!"}]}'

Console: http://127.0.0.1:$ADMIN_PORT/console/ (operator demo, password CONSOLE_PASSWORD in $secrets).
Metrics: http://127.0.0.1:$OPS_PORT/metrics (data plane: spool depth and age, snapshot version),
         http://127.0.0.1:$CP_OPS_PORT/metrics (control plane: ingest, nodes, snapshots, payments, pool).
Logs: $DATA/logs/. Press Ctrl-C to stop everything.
MSG

# Stay in the foreground; stop everything if any process dies.
while :; do
  for p in "${pids[@]}"; do
    if ! kill -0 "$p" 2>/dev/null; then log "process $p exited; see $DATA/logs/"; exit 1; fi
  done
  sleep 1 &
  wait $! || true
done

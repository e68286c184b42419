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
#   GATEWAY_TEST_BOX_PORT (9110) data plane's private test-box listener (the console's)
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
TB_PORT=${GATEWAY_TEST_BOX_PORT:-9110}
CATALOG=${GATEWAY_CATALOG:-configs/catalog.demo.yaml}

TAG=run
# shellcheck source=deploy/local/lib.sh
. deploy/local/lib.sh

on_exit_stop_all
postgres "$PG_PORT"
secrets

# --- Processes ----------------------------------------------------------------------------
log "starting provider simulator on 127.0.0.1:$SIM_PORT"
start simulator "$BIN/simulator" --listen "127.0.0.1:$SIM_PORT"

log "starting stripe-mock (payment API test double) on 127.0.0.1:$PAY_PORT"
# The deploy module pins stripe-mock (the gateway's own module links none of it).
[ -x "$BIN/stripe-mock" ] || go build -C deploy -o "$(cd "$BIN" && pwd)/stripe-mock" github.com/stripe/stripe-mock
# stripe-mock always opens an HTTPS listener too (on every interface at 12112 unless told
# otherwise): keep it on loopback at its own port so two local stacks never collide.
start stripe-mock "$BIN/stripe-mock" -http-addr "127.0.0.1:$PAY_PORT" -https-addr "127.0.0.1:$PAY_HTTPS_PORT"

GATEWAY_STRIPE_SECRET_KEY=sk_test_local GATEWAY_STRIPE_API_BASE="http://127.0.0.1:$PAY_PORT" \
GATEWAY_STRIPE_WEBHOOK_SECRET="$WEBHOOK_SECRET" \
GATEWAY_TOPUP_SUCCESS_URL="http://127.0.0.1:$DP_PORT/docs?topup=done" \
GATEWAY_TOPUP_CANCEL_URL="http://127.0.0.1:$DP_PORT/docs?topup=cancelled" \
GATEWAY_SIGNUP_CONFIRM_URL="http://127.0.0.1:$DP_PORT/docs?signup=received" \
GATEWAY_SIGNUP_ERROR_URL="http://127.0.0.1:$DP_PORT/docs?signup=error" \
GATEWAY_TEST_BOX_TOKEN="$TEST_BOX_TOKEN" \
  controlplane "$PG_PORT" "$CP_PORT" "$ADMIN_PORT" "$CP_OPS_PORT" --test-box-url "http://127.0.0.1:$TB_PORT"
GATEWAY_TEST_BOX_TOKEN="$TEST_BOX_TOKEN" \
  dataplane dataplane local-1 "$DATA/node" "$DP_PORT" "$OPS_PORT" "$CP_PORT" --access-log-format text \
  --test-box-listen "127.0.0.1:$TB_PORT"

wait_for "http://127.0.0.1:$SIM_PORT/healthz" simulator
wait_for "http://127.0.0.1:$CP_PORT/healthz" "control plane"
wait_for "http://127.0.0.1:$ADMIN_PORT/healthz" "control plane admin API"
wait_for "http://127.0.0.1:$DP_PORT/healthz" "data plane"

# --- Demo catalogue, account and key ------------------------------------------------------
export GATEWAY_ADMIN_URL="http://127.0.0.1:$ADMIN_PORT" GATEWAY_ADMIN_TOKEN="$ADMIN_TOKEN"
load_catalog "$CATALOG" "s#127.0.0.1:8090#127.0.0.1:$SIM_PORT#g"
demo_account demo "Demo AB" se
acct=$(cat "$DATA/demo.account")
key=$(cat "$DATA/demo.key")
# An operator for the console (admin role), made once with the admin token.
console_operator

# The admin token, webhook secret and API key: readable by the owner only.
write_private "$DATA/demo.env" <<ENV
GATEWAY_BASE_URL=http://127.0.0.1:$DP_PORT
GATEWAY_API_KEY=$key
GATEWAY_ACCOUNT_ID=$acct
GATEWAY_ADMIN_URL=http://127.0.0.1:$ADMIN_PORT
GATEWAY_ADMIN_TOKEN=$ADMIN_TOKEN
GATEWAY_WEBHOOK_SECRET=$WEBHOOK_SECRET
GATEWAY_CONSOLE_URL=http://127.0.0.1:$ADMIN_PORT/console/
GATEWAY_METRICS_URL=http://127.0.0.1:$OPS_PORT/metrics
GATEWAY_CP_METRICS_URL=http://127.0.0.1:$CP_OPS_PORT/metrics
GATEWAY_SIMULATOR_URL=http://127.0.0.1:$SIM_PORT
ENV

# Wait until the data plane has the key (snapshot push).
wait_for_key "http://127.0.0.1:$DP_PORT" "$key"

cat <<MSG

Gateway is up. Settings are in $DATA/demo.env (source it: set -a; . $DATA/demo.env; set +a).
Try:

  curl -s http://127.0.0.1:$DP_PORT/v1/chat/completions \\
    -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \\
    -d '{"model":"llama-3.1-8b-instruct","messages":[{"role":"user","content":"Hej!"}]}'

Console: http://127.0.0.1:$ADMIN_PORT/console/ (operator demo, password CONSOLE_PASSWORD in $DATA/secrets.env).
Metrics: http://127.0.0.1:$OPS_PORT/metrics (data plane: spool depth and age, snapshot version),
         http://127.0.0.1:$CP_OPS_PORT/metrics (control plane: ingest, nodes, snapshots, payments, pool).
Logs: $DATA/logs/ (appended per start). Press Ctrl-C to stop everything.
MSG

# Stay in the foreground; stop everything if any process dies.
supervise

#!/usr/bin/env bash
# Local fleet for `make run-fleet`: one Postgres cluster and control plane, and three
# regions of data planes, each node with its own port and spool:
#   se-sto  in SE  (serves se, eu and any accounts): two nodes, se-sto and se-sto-2, sharing
#                  a pool of two simulators (each node routes to both, and enforces half of
#                  every limit while the control plane is unreachable, --limit-share-nodes 2)
#   eu-fra  in DE  (serves eu and any accounts): one node and a simulator
#   us-any  in US  (serves any accounts): one node and a simulator
# and a demo account of each residency (se, eu, any). A node refuses an account outside its
# country with 403 naming the region that serves it (the control plane's --region-urls).
# .data/fleet.env lists the base URL of each region and the demo keys. Stays in the
# foreground until Ctrl-C or SIGTERM, then stops everything it started. State lives in
# .data/fleet/, apart from `make run`'s, and every port differs from `make run`'s, so both
# can run at once.
#
# Ports and paths (override by environment):
#   GATEWAY_FLEET_DATA        (.data/fleet)      state: Postgres, secrets, spools, logs
#   GATEWAY_FLEET_ENV         (.data/fleet.env)  base URLs and demo keys
#   GATEWAY_FLEET_PG_PORT     (5434)  Postgres
#   GATEWAY_FLEET_CP_PORT     (8181)  control plane's node-facing listener
#   GATEWAY_FLEET_ADMIN_PORT  (8182)  control plane's admin API
#   GATEWAY_FLEET_CP_OPS_PORT (9209)  control plane's /metrics, /livez, /readyz
#   GATEWAY_FLEET_FEED_PORT   (4322)  control plane's start feed (NATS), which every node joins
#   GATEWAY_FLEET_SE_PORT, _EU_PORT, _US_PORT              (8180, 8280, 8380) data planes
#   GATEWAY_FLEET_SE_OPS_PORT, _EU_OPS_PORT, _US_OPS_PORT  (9281, 9282, 9283) their /metrics, /readyz
#   GATEWAY_FLEET_SE_SIM_PORT, _EU_SIM_PORT, _US_SIM_PORT  (8190, 8290, 8390) simulators
#   GATEWAY_FLEET_SE2_PORT, _SE2_OPS_PORT   (8184, 9284) the second se-sto node
#   GATEWAY_FLEET_SE_SIM2_PORT              (8191) se-sto's second simulator
#   GATEWAY_FLEET_PROMETHEUS_PORT (9390)  Prometheus scraping every ops listener, when on PATH
#   GATEWAY_FLEET_GRAFANA_PORT    (3390)  Grafana with the gateway dashboard provisioned, when on PATH
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
BIN=${BIN:-bin}
DATA=${GATEWAY_FLEET_DATA:-.data/fleet}
FLEET_ENV=${GATEWAY_FLEET_ENV:-.data/fleet.env}
PG_PORT=${GATEWAY_FLEET_PG_PORT:-5434}
CP_PORT=${GATEWAY_FLEET_CP_PORT:-8181}
ADMIN_PORT=${GATEWAY_FLEET_ADMIN_PORT:-8182}
CP_OPS_PORT=${GATEWAY_FLEET_CP_OPS_PORT:-9209}
FEED_PORT=${GATEWAY_FLEET_FEED_PORT:-4322}
SE_PORT=${GATEWAY_FLEET_SE_PORT:-8180}
EU_PORT=${GATEWAY_FLEET_EU_PORT:-8280}
US_PORT=${GATEWAY_FLEET_US_PORT:-8380}
SE_OPS_PORT=${GATEWAY_FLEET_SE_OPS_PORT:-9281}
EU_OPS_PORT=${GATEWAY_FLEET_EU_OPS_PORT:-9282}
US_OPS_PORT=${GATEWAY_FLEET_US_OPS_PORT:-9283}
SE_SIM_PORT=${GATEWAY_FLEET_SE_SIM_PORT:-8190}
EU_SIM_PORT=${GATEWAY_FLEET_EU_SIM_PORT:-8290}
US_SIM_PORT=${GATEWAY_FLEET_US_SIM_PORT:-8390}
SE2_PORT=${GATEWAY_FLEET_SE2_PORT:-8184}
SE2_OPS_PORT=${GATEWAY_FLEET_SE2_OPS_PORT:-9284}
SE_SIM2_PORT=${GATEWAY_FLEET_SE_SIM2_PORT:-8191}
PROMETHEUS_PORT=${GATEWAY_FLEET_PROMETHEUS_PORT:-9390}
GRAFANA_PORT=${GATEWAY_FLEET_GRAFANA_PORT:-3390}

TAG=run-fleet
# shellcheck source=deploy/local/lib.sh
. deploy/local/lib.sh

on_exit_stop_all
postgres "$PG_PORT"
secrets

se_url="http://127.0.0.1:$SE_PORT" se2_url="http://127.0.0.1:$SE2_PORT" eu_url="http://127.0.0.1:$EU_PORT" us_url="http://127.0.0.1:$US_PORT"

for sim in "se $SE_SIM_PORT" "se-2 $SE_SIM2_PORT" "eu $EU_SIM_PORT" "us $US_SIM_PORT"; do
  set -- $sim
  log "starting provider simulator $1 on 127.0.0.1:$2"
  start "simulator-$1" "$BIN/simulator" --listen "127.0.0.1:$2"
done
# The control plane names each policy's region in every snapshot.
controlplane "$PG_PORT" "$CP_PORT" "$ADMIN_PORT" "$CP_OPS_PORT" \
  --region-urls "se=$se_url,eu=$eu_url,any=$us_url" --start-feed-listen "127.0.0.1:$FEED_PORT"
# se-sto's two nodes: same region, same snapshots, same simulator pool; a load balancer in
# front would spread clients over them. They share their starts on the start feed, and
# each enforces half of every limit while the control plane does not answer.
dataplane se-sto se-sto "$DATA/se-sto" "$SE_PORT" "$SE_OPS_PORT" "$CP_PORT" --region se-sto --country SE \
  --limit-share-nodes 2 --start-feed-url "nats://127.0.0.1:$FEED_PORT"
dataplane se-sto-2 se-sto-2 "$DATA/se-sto-2" "$SE2_PORT" "$SE2_OPS_PORT" "$CP_PORT" --region se-sto --country SE \
  --limit-share-nodes 2 --start-feed-url "nats://127.0.0.1:$FEED_PORT"
# The other regions' nodes join the feed too (harmless: a node is live on it while it
# hears as many nodes as the fleet exchange counts in its own region).
dataplane eu-fra eu-fra "$DATA/eu-fra" "$EU_PORT" "$EU_OPS_PORT" "$CP_PORT" --region eu-fra --country DE \
  --start-feed-url "nats://127.0.0.1:$FEED_PORT"
dataplane us-any us-any "$DATA/us-any" "$US_PORT" "$US_OPS_PORT" "$CP_PORT" --region us-any --country US \
  --start-feed-url "nats://127.0.0.1:$FEED_PORT"

for p in "$SE_SIM_PORT" "$SE_SIM2_PORT" "$EU_SIM_PORT" "$US_SIM_PORT"; do wait_for "http://127.0.0.1:$p/healthz" simulator; done
wait_for "http://127.0.0.1:$CP_PORT/healthz" "control plane"
wait_for "http://127.0.0.1:$ADMIN_PORT/healthz" "control plane admin API"
for u in "$se_url" "$se2_url" "$eu_url" "$us_url"; do wait_for "$u/healthz" "data plane"; done
# Prometheus and Grafana with the gateway dashboard, when installed (else how to start them).
grafana_stack "$PROMETHEUS_PORT" "$GRAFANA_PORT" "127.0.0.1:$CP_OPS_PORT" \
  "127.0.0.1:$SE_OPS_PORT" "127.0.0.1:$SE2_OPS_PORT" "127.0.0.1:$EU_OPS_PORT" "127.0.0.1:$US_OPS_PORT"

# --- Catalogue and a demo account per residency -------------------------------------------
export GATEWAY_ADMIN_URL="http://127.0.0.1:$ADMIN_PORT" GATEWAY_ADMIN_TOKEN="$ADMIN_TOKEN"
load_catalog configs/catalog.fleet.yaml \
  "s#127.0.0.1:8190#127.0.0.1:$SE_SIM_PORT#g; s#127.0.0.1:8191#127.0.0.1:$SE_SIM2_PORT#g; s#127.0.0.1:8290#127.0.0.1:$EU_SIM_PORT#g; s#127.0.0.1:8390#127.0.0.1:$US_SIM_PORT#g"
demo_account demo-se "Demo Sverige AB" se
demo_account demo-eu "Demo Europa GmbH" eu
demo_account demo-any "Demo Anywhere Inc" any
console_operator

mkdir -p "$(dirname "$FLEET_ENV")"
( umask 077
  cat >"$FLEET_ENV" <<ENV
# make run-fleet: the base URL of each region's data plane (se-sto has two nodes sharing
# one simulator pool), and a demo key per residency.
GATEWAY_FLEET_SE_STO_URL=$se_url
GATEWAY_FLEET_SE_STO_2_URL=$se2_url
GATEWAY_FLEET_EU_FRA_URL=$eu_url
GATEWAY_FLEET_US_ANY_URL=$us_url
GATEWAY_FLEET_SE_KEY=$(cat "$DATA/demo-se.key")
GATEWAY_FLEET_EU_KEY=$(cat "$DATA/demo-eu.key")
GATEWAY_FLEET_ANY_KEY=$(cat "$DATA/demo-any.key")
GATEWAY_ADMIN_URL=http://127.0.0.1:$ADMIN_PORT
GATEWAY_ADMIN_TOKEN=$ADMIN_TOKEN
GATEWAY_CONSOLE_URL=http://127.0.0.1:$ADMIN_PORT/console/
ENV
)

# Wait until every node knows every demo key (as its own or as served elsewhere).
for u in "$se_url" "$se2_url" "$eu_url" "$us_url"; do
  for k in demo-se demo-eu demo-any; do wait_for_key "$u" "$(cat "$DATA/$k.key")"; done
done

cat <<MSG

Fleet is up: se-sto $se_url and $se2_url (SE, two nodes sharing two simulators),
eu-fra $eu_url (DE), us-any $us_url (US).
Base URLs and demo keys are in $FLEET_ENV (source it: set -a; . $FLEET_ENV; set +a).
An se account is served in Stockholm and refused in the US:

  curl -s \$GATEWAY_FLEET_SE_STO_URL/v1/chat/completions -H "Authorization: Bearer \$GATEWAY_FLEET_SE_KEY" \\
    -H 'Content-Type: application/json' -d '{"model":"llama-3.1-8b-instruct","messages":[{"role":"user","content":"Hej!"}]}'
  curl -s \$GATEWAY_FLEET_US_ANY_URL/v1/chat/completions -H "Authorization: Bearer \$GATEWAY_FLEET_SE_KEY" \\
    -H 'Content-Type: application/json' -d '{"model":"llama-3.1-8b-instruct","messages":[{"role":"user","content":"Hej!"}]}'

Nodes, their regions, applied snapshot versions, spool ages, limits modes and start feeds
(nats://127.0.0.1:$FEED_PORT): $BIN/gatewayctl nodes list
(with GATEWAY_ADMIN_URL and GATEWAY_ADMIN_TOKEN from $FLEET_ENV).
Console: http://127.0.0.1:$ADMIN_PORT/console/ (operator demo, password CONSOLE_PASSWORD in $DATA/secrets.env).
Grafana (when installed): http://127.0.0.1:$GRAFANA_PORT/d/sekgate-gateway, provisioned from $DATA/grafana/provisioning;
Prometheus (when installed): http://127.0.0.1:$PROMETHEUS_PORT, scraping $DATA/prometheus.yml's targets.
Logs: $DATA/logs/ (appended per start). Press Ctrl-C to stop everything.
MSG

supervise

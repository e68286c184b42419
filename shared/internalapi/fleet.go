package internalapi

// PathFleet: POST a FleetReport, answered 200 with a FleetAnswer. Every node sends one
// each fleet interval (its --fleet-interval): the demand of its limited keys and accounts
// and the server capacity it learned per route. The answer is the node's share of each
// limit it reported and the fleet's capacity per route (docs/limits.md, "Several
// nodes"). Nothing is stored: a control plane keeps the reports in memory for three of
// the node's intervals.
const PathFleet = "/internal/v1/fleet"

// MaxFleetEntries bounds the keys, accounts and routes of one report, each.
const MaxFleetEntries = 100_000

// FleetReport is one node's report to the fleet exchange.
type FleetReport struct {
	// IntervalMs is the node's report interval: the control plane forgets the node after
	// three intervals without a report.
	IntervalMs int64 `json:"interval_ms"`
	// WindowMs is the time the demand counts cover (the time since the node's last
	// report, about IntervalMs).
	WindowMs int64 `json:"window_ms"`
	// Fallback is true when the node enforced its fallback share (no fresh answer) when
	// it sent the report.
	Fallback bool `json:"fallback,omitempty"`
	// StartFeed is the node's start feed when it sent the report: StartFeedLive (it hears
	// every node and takes the servers' free slots whole), StartFeedSplit (it has a feed
	// but does not hear every node, so it splits the servers' reports), "" (none).
	StartFeed string `json:"start_feed,omitempty"`
	// Region is the node's region (its --region): the nodes of one region share its
	// model servers, and share their free slots and take turns among themselves
	// (FleetAnswer.RegionNodes).
	Region   string        `json:"region,omitempty"`
	Accounts []FleetDemand `json:"accounts,omitempty"`
	Keys     []FleetDemand `json:"keys,omitempty"`
	Routes   []RouteSlots  `json:"routes,omitempty"`
	// Placements are the prefix keys the node sent to routes since its last report
	// (at most MaxFleetPlacements); PlacementsSince is the PlacementSeq of the last answer
	// it took placements from (0: none yet).
	Placements      []Placement `json:"placements,omitempty"`
	PlacementsSince uint64      `json:"placements_since,omitempty"`
	// Flows are the accounts with requests in flight or lately active in the node's fair
	// queue (at most MaxFleetFlows, the busiest), so every node judges an account's share
	// of the servers by what it holds on all of them (dataplane/fairq).
	Flows []FlowLoad `json:"flows,omitempty"`
}

// The states of a node's start feed (FleetReport.StartFeed).
const (
	StartFeedLive  = "live"
	StartFeedSplit = "split"
)

// MaxFleetFlows bounds the flows of one report and of one answer's maps.
const MaxFleetFlows = 10_000

// FlowLoad is one account's traffic through a node's fair queue when the report was made:
// its requests in flight on that node and its weight.
type FlowLoad struct {
	Account  string `json:"a"`
	InFlight int64  `json:"n,omitempty"`
	Weight   int64  `json:"w"`
}

// MaxFleetPlacements bounds the placements of one report and of one answer.
const MaxFleetPlacements = 50_000

// Placement is a prefix key sent to a route (dataplane/routing): Key the request's prefix
// key, Tag the route's tag (the low bits of the hash of its ID, the same on every node),
// AgoMs how long before the report or answer it was sent (so nodes' clocks need not
// agree).
type Placement struct {
	Key   uint64 `json:"k"`
	Tag   uint32 `json:"t"`
	AgoMs int64  `json:"a"`
}

// FleetDemand is one limited key's or account's demand on one node over the window:
// requests checked against its limits (admitted and refused) and requests in flight
// when the report was made.
type FleetDemand struct {
	ID       string `json:"id"`
	Attempts int64  `json:"attempts"`
	InFlight int64  `json:"in_flight,omitempty"`
}

// RouteSlots is the server capacity (requests it runs at once) a node learned for a route
// and still trusts.
type RouteSlots struct {
	RouteID string `json:"route_id"`
	Slots   int64  `json:"slots"`
}

// FleetAnswer is the control plane's answer to a FleetReport.
type FleetAnswer struct {
	// Nodes is the number of live nodes (those that reported within three of their
	// intervals), this one included.
	Nodes int `json:"nodes"`
	// Rank is the node's place among the live nodes ordered by node ID, 1 to Nodes (0 or
	// absent from a control plane that does not give it). The nodes take turns at what an
	// account above its share may start on the same server reports by it.
	Rank int `json:"rank,omitempty"`
	// RegionNodes and RegionRank are the same within the node's region (the live nodes
	// that reported the same FleetReport.Region): the nodes that share its model servers'
	// free slots, take turns at them and send each route's warm-up copies. Absent from an
	// older control plane: Nodes and Rank serve.
	RegionNodes int `json:"region_nodes,omitempty"`
	RegionRank  int `json:"region_rank,omitempty"`
	// Accounts and Keys are this node's share (0..1] of the limits of each account and
	// key it reported; one it did not report takes 1/Nodes.
	Accounts map[string]float64 `json:"accounts,omitempty"`
	Keys     map[string]float64 `json:"keys,omitempty"`
	// Routes is the largest capacity any live node learned, per route ID.
	Routes map[string]int64 `json:"routes,omitempty"`
	// Placements are the other nodes' placements since the report's PlacementsSince that
	// are still warm (the newest MaxFleetPlacements); PlacementSeq is where the next report
	// continues from.
	Placements   []Placement `json:"placements,omitempty"`
	PlacementSeq uint64      `json:"placement_seq,omitempty"`
	// FlowsElsewhere is, per account, the requests in flight on the live nodes other than
	// this one (accounts with none left out); FlowWeights the weight of every account
	// some live node reported a flow of (the accounts active fleet-wide).
	FlowsElsewhere map[string]int64 `json:"flows_elsewhere,omitempty"`
	FlowWeights    map[string]int64 `json:"flow_weights,omitempty"`
}

package meter

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

const testToken = "node-token-1"

// fakeCP is a control plane good enough for the meter: it dedups records by request_id,
// debits a ledger whose sequence grows by one per entry, and serves the balance watch.
type fakeCP struct {
	t   testing.TB
	srv *httptest.Server

	down     atomic.Bool  // answer 503 to usage posts
	posts    atomic.Int64 // usage POSTs received, failed ones included
	delay    atomic.Int64 // nanoseconds to wait before applying a batch
	badReply atomic.Bool  // answer 200 with a reply naming another batch
	watching atomic.Int64 // balance watches waiting for a change
	// refuse, when set, answers a batch holding a record whose request_id starts with
	// "poison" with this status.
	refuse atomic.Int64

	mu       sync.Mutex
	records  map[string]usage.Record
	order    []string
	balances map[string]int64
	acctSeq  map[string]int64
	seq      int64
	changed  chan struct{}
	nodes    map[string]bool
	// spoolAges are the HeaderSpoolAge values of usage posts that were applied, in order;
	// watchQueries are the balance watch's query strings.
	spoolAges    []string
	watchQueries []string
	// spent is every account's and key's spend (the fake knows one budget period);
	// capped lists those whose spend it reports (snapshot.Spent), keyAcct each key's
	// account.
	spent   map[string]int64
	capped  map[string]bool
	keyAcct map[string]string
}

func newFakeCP(t testing.TB) *fakeCP {
	cp := &fakeCP{
		t: t, records: map[string]usage.Record{}, balances: map[string]int64{}, acctSeq: map[string]int64{},
		changed: make(chan struct{}), nodes: map[string]bool{},
		spent: map[string]int64{}, capped: map[string]bool{}, keyAcct: map[string]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+internalapi.PathUsage, cp.usage)
	mux.HandleFunc("GET "+internalapi.PathBalances, cp.watch)
	cp.srv = httptest.NewServer(mux)
	t.Cleanup(cp.srv.Close)
	return cp
}

func (cp *fakeCP) authOK(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bearer "+testToken || r.Header.Get(internalapi.HeaderNodeID) == "" {
		http.Error(w, `{"error":{"type":"authentication_error","message":"bad node token"}}`, http.StatusUnauthorized)
		return false
	}
	return true
}

func (cp *fakeCP) usage(w http.ResponseWriter, r *http.Request) {
	cp.posts.Add(1)
	if !cp.authOK(w, r) {
		return
	}
	if cp.down.Load() {
		http.Error(w, `{"error":{"type":"unavailable","message":"down"}}`, http.StatusServiceUnavailable)
		return
	}
	var b usage.Batch
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		cp.t.Errorf("fake control plane: bad batch: %v", err)
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"bad batch"}}`, http.StatusBadRequest)
		return
	}
	if st := cp.refuse.Load(); st != 0 {
		for _, rec := range b.Records {
			if strings.HasPrefix(rec.RequestID, "poison") {
				http.Error(w, `{"error":{"type":"invalid_request_error","message":"record refused"}}`, int(st))
				return
			}
		}
	}
	if b.NodeID != r.Header.Get(internalapi.HeaderNodeID) {
		cp.t.Errorf("batch node_id %q != header %q", b.NodeID, r.Header.Get(internalapi.HeaderNodeID))
	}
	if d := cp.delay.Load(); d > 0 { // a slow control plane: it commits all the same
		select {
		case <-r.Context().Done(): // the meter gave up: commit unanswered
		case <-time.After(time.Duration(d)):
		}
	}
	cp.mu.Lock()
	cp.spoolAges = append(cp.spoolAges, r.Header.Get(internalapi.HeaderSpoolAge))
	cp.mu.Unlock()
	reply := cp.apply(b)
	if cp.badReply.Load() {
		reply.BatchID = "not-" + b.BatchID
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(reply)
}

func (cp *fakeCP) apply(b usage.Batch) usage.Reply {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.nodes[b.NodeID] = true
	reply := usage.Reply{BatchID: b.BatchID}
	touched := map[string]bool{}
	for _, rec := range b.Records {
		touched[rec.AccountID] = true
		if _, dup := cp.records[rec.RequestID]; dup {
			reply.Duplicates++
			continue
		}
		reply.Inserted++
		cp.records[rec.RequestID] = rec
		cp.order = append(cp.order, rec.RequestID)
		cp.seq++
		cp.balances[rec.AccountID] -= rec.PriceMicroSEK
		cp.acctSeq[rec.AccountID] = cp.seq
		cp.spent[rec.AccountID] += rec.PriceMicroSEK
		if rec.KeyID != nil {
			cp.spent[*rec.KeyID] += rec.PriceMicroSEK
			cp.keyAcct[*rec.KeyID] = rec.AccountID
		}
	}
	for _, id := range slices.Sorted(maps.Keys(touched)) {
		reply.Balances = append(reply.Balances, snapshot.Balance{AccountID: id, MicroSEK: cp.balances[id]})
	}
	reply.Spent = cp.spentOfLocked(touched)
	reply.BalanceSeq = cp.seq
	if reply.Inserted > 0 {
		close(cp.changed)
		cp.changed = make(chan struct{})
	}
	return reply
}

// credit adds to an account's ledger and wakes balance watchers.
func (cp *fakeCP) credit(acct string, micro int64) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.seq++
	cp.balances[acct] += micro
	cp.acctSeq[acct] = cp.seq
	close(cp.changed)
	cp.changed = make(chan struct{})
}

// snapshotBalances returns all balances and their sequence, like a snapshot.
func (cp *fakeCP) snapshotBalances() ([]snapshot.Balance, int64) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var out []snapshot.Balance
	for _, id := range slices.Sorted(maps.Keys(cp.balances)) {
		out = append(out, snapshot.Balance{AccountID: id, MicroSEK: cp.balances[id]})
	}
	return out, cp.seq
}

func (cp *fakeCP) watch(w http.ResponseWriter, r *http.Request) {
	if !cp.authOK(w, r) {
		return
	}
	cp.mu.Lock()
	cp.watchQueries = append(cp.watchQueries, r.URL.RawQuery)
	cp.mu.Unlock()
	since, err1 := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	wait, err2 := strconv.Atoi(r.URL.Query().Get("wait"))
	if err1 != nil || err2 != nil {
		http.Error(w, "bad query", http.StatusBadRequest)
		return
	}
	deadline := time.After(time.Duration(wait) * time.Second)
	for {
		cp.mu.Lock()
		upd := usage.BalanceUpdate{Seq: cp.seq, Balances: []snapshot.Balance{}}
		for _, id := range slices.Sorted(maps.Keys(cp.acctSeq)) {
			if cp.acctSeq[id] > since {
				upd.Balances = append(upd.Balances, snapshot.Balance{AccountID: id, MicroSEK: cp.balances[id]})
			}
		}
		touched := map[string]bool{}
		for _, b := range upd.Balances {
			touched[b.AccountID] = true
		}
		upd.Spent = cp.spentOfLocked(touched)
		ch := cp.changed
		waiting := len(upd.Balances) == 0
		if waiting {
			cp.watching.Add(1) // under mu: a change from now on closes ch
		}
		cp.mu.Unlock()
		if !waiting {
			json.NewEncoder(w).Encode(upd)
			return
		}
		select {
		case <-ch:
			cp.watching.Add(-1)
		case <-deadline:
			cp.watching.Add(-1)
			json.NewEncoder(w).Encode(upd)
			return
		case <-r.Context().Done():
			cp.watching.Add(-1)
			return
		}
	}
}

// spentOfLocked is the spend of the capped accounts among accts and of their capped keys,
// for the period that started this month (by the real clock); the caller holds mu.
func (cp *fakeCP) spentOfLocked(accts map[string]bool) []snapshot.Spent {
	var out []snapshot.Spent
	from := snapshot.PeriodStart(snapshot.PeriodMonth, time.Now())
	for _, id := range slices.Sorted(maps.Keys(cp.capped)) {
		acct, key := id, ""
		if a, ok := cp.keyAcct[id]; ok {
			acct, key = a, id
		}
		if accts[acct] {
			out = append(out, snapshot.Spent{AccountID: acct, KeyID: key, From: from, MicroSEK: cp.spent[id]})
		}
	}
	return out
}

// capSpend makes the fake report the account's (or, with key, the key's) spend.
func (cp *fakeCP) capSpend(acct, key string) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if key == "" {
		cp.capped[acct] = true
		return
	}
	cp.capped[key], cp.keyAcct[key] = true, acct
}

// spentOf is the account's (or key's) spend the fake recorded.
func (cp *fakeCP) spentOf(id string) int64 {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.spent[id]
}

func (cp *fakeCP) count() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return len(cp.records)
}

func (cp *fakeCP) balance(acct string) int64 {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.balances[acct]
}

func (cp *fakeCP) record(id string) (usage.Record, bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	r, ok := cp.records[id]
	return r, ok
}

package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sekgate/gateway/controlplane/httpjson"
	"github.com/sekgate/gateway/controlplane/publish"
	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

const usageBodyLimit = 32 << 20

// parseWait reads the wait parameter (whole seconds, default 0) capped at MaxWait.
func (s *server) parseWait(r *http.Request) (time.Duration, bool) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return min(time.Duration(n)*time.Second, s.cfg.MaxWait), true
}

func parseSeq(r *http.Request, name string) (int64, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}

// validHash accepts "" (not sent) or a hex SHA-256.
func validHash(h string) bool {
	if h == "" {
		return true
	}
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func nodeID(r *http.Request) (string, bool) {
	id := strings.TrimSpace(r.Header.Get(internalapi.HeaderNodeID))
	return id, id != "" && len(id) <= 200 && validText(id, 200)
}

// getSnapshot answers GET /internal/v1/snapshot?have=<version>&hash=<structure hash>&
// issued=<unix nanos>&country=<ISO alpha-2>&region=<name>&wait=<seconds>: 200 with the signed snapshot
// when what the node holds is outdated (another version, another structure at that version,
// or an older issue; see publish.Have), at once or as soon as it is within wait, else 304.
// have is the node's acknowledgement of what it applied. With country the snapshot is the
// one filtered for that country (publish.Filter); without it, the unfiltered one. region
// (the node's --region) and the spool age the node states (internalapi.HeaderSpoolAge) are
// recorded for gatewayctl nodes list.
func (s *server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	node, ok := nodeID(r)
	if !ok {
		writeError(w, invalid(internalapi.HeaderNodeID, "The %s header is required (at most 200 characters).", internalapi.HeaderNodeID))
		return
	}
	have, ok := parseSeq(r, "have")
	if !ok {
		writeError(w, invalid("have", "have must be a non-negative integer version."))
		return
	}
	wait, ok := s.parseWait(r)
	if !ok {
		writeError(w, invalid("wait", "wait must be a non-negative whole number of seconds."))
		return
	}
	hash := r.URL.Query().Get("hash")
	if !validHash(hash) {
		writeError(w, invalid("hash", "hash must be 64 lower-case hex digits."))
		return
	}
	issued, ok := parseSeq(r, "issued")
	if !ok {
		writeError(w, invalid("issued", "issued must be a non-negative integer (Unix nanoseconds)."))
		return
	}
	country := r.URL.Query().Get("country")
	if !residency.ValidCountry(country) {
		writeError(w, invalid("country", "country must be an upper-case ISO 3166-1 alpha-2 country code, e.g. SE."))
		return
	}
	region := r.URL.Query().Get("region")
	if !internalapi.ValidRegion(region) {
		writeError(w, invalid("region", "region must be lower-case letters, digits and '-' (at most 63)."))
		return
	}
	age, _ := spoolAge(r)
	if err := s.cfg.Store.TouchNode(r.Context(), node, have, region, age); err != nil {
		// Serving the snapshot matters more than the bookkeeping.
		s.log.Warn("record node poll", "node", node, "err", err)
	}
	s.reportBreakers(r, node)
	s.reportRouteHealth(r, node)
	if cur, _ := s.cfg.Snapshots.Current(); cur == nil {
		writeError(w, httpjson.ErrNotReady)
		return
	}
	protocol, _ := internalapi.ParseProtocol(r.Header.Get(internalapi.HeaderProtocol)) // checked by the node middleware
	cur := s.cfg.Snapshots.Wait(r.Context(), publish.Have{Version: have, StructHash: hash, IssuedAt: issued, Country: country, Protocol: protocol}, wait)
	if cur == nil {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(cur.JSON)))
	w.Header().Set("ETag", strconv.Quote(cur.Snapshot.Hash))
	w.WriteHeader(http.StatusOK)
	w.Write(cur.JSON)
}

// rawBatch is a usage.Batch whose records are kept as sent: each is decoded on its own by
// the store, so one record a node got wrong is rejected alone instead of failing the
// batch (and stalling the node's spool).
type rawBatch struct {
	NodeID  string            `json:"node_id"`
	BatchID string            `json:"batch_id"`
	Records []json.RawMessage `json:"records"`
}

// postUsage applies a usage batch and answers usage.Reply once committed. Records the
// control plane cannot accept are counted in the reply's rejected and kept in
// rejected_records; the answer is still 200, so the node drops the batch. Only a body
// that is not a batch at all is a 400.
func (s *server) postUsage(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBatch(w, r)
	if !ok {
		return
	}
	if b.NodeID == "" {
		b.NodeID, _ = nodeID(r)
	}
	reply, err := s.cfg.Store.IngestRaw(r.Context(), b.NodeID, b.BatchID, b.Records)
	if err != nil {
		s.storeError(w, r, err, "batch")
		return
	}
	if node, ok := nodeID(r); ok {
		s.reportSpoolAge(r.Context(), r, node)
	}
	writeJSON(w, http.StatusOK, reply)
}

// readBatch reads a usage batch: a plain one by splitBatch, anything else by decodeBody.
func (s *server) readBatch(w http.ResponseWriter, r *http.Request) (rawBatch, bool) {
	body, err := readUsageBody(r)
	if err == nil && len(body) <= usageBodyLimit {
		if b, ok := splitBatch(body); ok {
			return b, true
		}
	}
	if err == nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	var b rawBatch
	return b, decodeBody(w, r, usageBodyLimit, &b, false)
}

// readUsageBody reads a usage batch's body, at most usageBodyLimit+1 bytes. A body whose
// Content-Length is declared and within the limit is read into one buffer of its size
// (batches are hundreds of KiB: io.ReadAll would grow and copy its buffer a dozen times);
// net/http ends it at that length and fails a shorter one.
func readUsageBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= usageBodyLimit {
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	return io.ReadAll(io.LimitReader(r.Body, usageBodyLimit+1))
}

// getBalances answers GET /internal/v1/balances?since=<seq>&country=<ISO alpha-2>&
// wait=<seconds> with the balances changed after since, waiting up to wait for a change; an
// empty list when none. With country, only accounts whose residency policy admits it are
// listed (the accounts of the snapshot filtered for that country): a node learns no other
// country's account IDs or balances.
func (s *server) getBalances(w http.ResponseWriter, r *http.Request) {
	since, ok := parseSeq(r, "since")
	if !ok {
		writeError(w, invalid("since", "since must be a non-negative integer."))
		return
	}
	country := r.URL.Query().Get("country")
	if !residency.ValidCountry(country) {
		writeError(w, invalid("country", "country must be an upper-case ISO 3166-1 alpha-2 country code, e.g. SE."))
		return
	}
	if node, ok := nodeID(r); ok {
		s.reportSpoolAge(r.Context(), r, node)
	}
	wait, ok := s.parseWait(r)
	if !ok {
		writeError(w, invalid("wait", "wait must be a non-negative whole number of seconds."))
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		signal := s.cfg.Snapshots.BalanceSignal() // before reading, so no change is missed
		upd, err := s.cfg.Store.BalanceChangesIn(r.Context(), since, country)
		if err != nil {
			s.storeError(w, r, err, "balances")
			return
		}
		seq := upd.Seq
		if len(upd.Balances) > 0 {
			writeJSON(w, http.StatusOK, upd)
			return
		}
		// Nothing this node may see changed up to seq (changes of other countries' accounts
		// are skipped): the next read starts there.
		since = max(since, seq)
		select {
		case <-signal:
			continue
		case <-timer.C:
		case <-r.Context().Done():
		}
		writeJSON(w, http.StatusOK, usage.BalanceUpdate{Seq: max(seq, since), Balances: []snapshot.Balance{}})
		return
	}
}

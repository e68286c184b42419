package meter

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"
)

// Dead letters: a batch the control plane refuses permanently must not hold the spool (and
// with it every later record of the node) forever. Its records are written, framed like
// spool records, to a dead-letter segment under <DataDir>/spool/dead/<batch_id>.log, the
// gateway_usage_dead_letter_records_total counter grows, an error is logged, and the spool
// moves on. An operator inspects the file and, once the cause is fixed, can replay its
// records (the control plane deduplicates by request_id).
//
// Permanent refusals are the 4xx statuses that say the batch itself is unacceptable: every
// 4xx except 401 and 403 (the node's credentials: fixed by the operator, then the batch
// goes through), 404 (a wrong control-plane URL or an older control plane), 408, 409, 425
// and 429 (transient). 5xx and transport errors are retried forever.

const deadDir = "dead"

// permanentRefusal reports whether status refuses a usage batch for good.
func permanentRefusal(status int) bool {
	if status < 400 || status > 499 {
		return false
	}
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout,
		http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return true
}

// refusedError is send's error for a batch refused permanently.
type refusedError struct {
	status int
	reason string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("control plane refused the batch permanently: status %d%s", e.status, e.reason)
}

// deadLetter writes b's records to a dead-letter segment and lets the spool move past them.
func (m *Meter) deadLetter(b *batch, refusal *refusedError) error {
	dir := filepath.Join(m.cfg.DataDir, "spool", deadDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create dead-letter dir: %w", err)
	}
	var out []byte
	n := 0
	gjson.GetBytes(b.body, "records").ForEach(func(_, rec gjson.Result) bool {
		out = appendFrame(out, []byte(rec.Raw))
		n++
		return true
	})
	path := filepath.Join(dir, b.id+segSuffix)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create dead-letter segment: %w", err)
	}
	_, err = f.Write(out)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write dead-letter segment %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	m.deadLetters.Add(uint64(n))
	m.setErr(refusal)
	m.log.Error("meter: batch refused permanently by the control plane; its records were moved to a dead-letter segment",
		"batch_id", b.id, "records", n, "status", refusal.status, "reason", refusal.reason, "segment", filepath.Join(deadDir, b.id+segSuffix))
	return nil
}

// asRefused unwraps a permanent refusal.
func asRefused(err error) (*refusedError, bool) {
	var r *refusedError
	ok := errors.As(err, &r)
	return r, ok
}

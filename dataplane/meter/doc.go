// Package meter carries a data-plane node's request records to the control plane without
// losing any, and keeps the node's view of account balances, and of the spend of accounts'
// and keys' budgets (budget.go, OverBudget), for admission.
//
// # Spool and durability
//
// Record encodes a finished request's usage.Record and appends it to the active segment
// file under <DataDir>/spool with one write() before it returns: once Record returned, the
// record is in the kernel's page cache and no longer depends on the process. It never
// waits for an fsync or the network. A syncer goroutine makes written records durable with
// one fsync per group: the records written within Config.FsyncWindow (default 10 ms) of the
// first unsynced one are fsynced together. Segments are append-only; one is sealed and a
// new one started after Config.SegmentBytes. Each record is framed as
//
//	uint32 little-endian payload length | uint32 little-endian CRC-32C of payload | payload (JSON)
//
// so that a write torn by a crash or power loss is detected when the spool is read back and
// only that torn tail is skipped; records before it are kept. A write that fails (disk
// full, I/O error) is cut back to the last good frame and its segment sealed, so no
// record ever follows a torn frame; the record is then held in memory and written to a new
// segment by the syncer, with backoff, once the disk accepts it. A failed fsync is
// treated the same way for every record it should have covered: the segment is cut back
// to its last fsynced frame and those records are written again into a new segment (the
// page cache is not trusted after a failed fsync).
//
// Durability: a process crash (SIGKILL, OOM kill, panic) loses nothing handed to Record;
// after the restart every record written is recovered from the spool. A power loss or
// kernel crash can lose the records of at most the last FsyncWindow plus one fsync (a few
// milliseconds on a healthy disk); everything older survives both. Only while the disk
// refuses writes are records held in process memory (Stats.QueuedRecords, and
// Stats.LastError says why); those are lost if the process dies then. Flush and Close wait
// until every record handed over is fsynced.
//
// # Delivery
//
// A sender goroutine (Run) reads durable (fsynced) records in spool order, groups them into
// usage.Batch values by size (Config.BatchSize, default 500) and time (Config.BatchInterval,
// default 200 ms), and POSTs each batch to the control plane's /internal/v1/usage over the
// node's link (Config.Link). Sends are retried with the link's capped exponential backoff
// (cplink.Client.Backoff) for as long as the context lives: no record is ever dropped after N attempts. A
// batch's records count as delivered only when the control plane answered with its
// usage.Reply; a segment file is deleted once all its records are confirmed and it holds
// none that are written but not yet fsynced. Sending only fsynced records keeps what the
// control plane saw a subset of what survives a power loss on the node, and lets a failed
// fsync cut a segment back without touching anything already sent. After a crash
// or restart every record still in the spool is sent again; the control plane deduplicates
// by request_id, so records confirmed but not yet deleted are harmless to resend. Stats
// (and the gateway_spool_* / gateway_usage_* metrics) report spool depth and the age of the
// oldest unconfirmed record, which is what an operator alerts on.
//
// # Balances and the overspend bound
//
// The meter keeps, per account, the newest balance it knows (from SeedBalances, from every
// usage.Reply and from a long-poll balance watch on /internal/v1/balances) together with the
// ledger sequence it reflects, and the spend it handed over but has not had confirmed.
// A balance never replaces one with the same or a newer sequence. Spendable returns
//
//	known balance − unconfirmed spend − confirmed spend whose debit the known balance may not yet include
//
// A record's price counts as unconfirmed from the moment Record is called (before it is
// fsynced) until the reply confirming its batch arrives; at that moment the reply's balances,
// which include the debit, are applied first and only then is the spend released, so
// Spendable never briefly forgets a debit. Records recovered from the spool after a restart
// count as unconfirmed spend again (conservative: the control plane may already have
// debited them).
//
// The server admits a request only when Spendable(account) > 0 and calls Record with its
// price when it finishes. On one node the final balance of an account therefore satisfies
//
//	balance ≥ −C × Pmax
//
// where C is the largest number of the account's requests in flight on the node at once
// (admitted, not yet recorded) and Pmax the largest price of a single request: when the last
// request was admitted, everything already recorded had been subtracted, so only requests
// then in flight (at most C, the last one included) can take the balance below zero.
//
// With N nodes serving the same account, each node learns the others' spend only through
// the control plane: after FsyncWindow + BatchInterval + one round trip the spending node's
// batch is committed, and the other nodes see the new balance on their next balance-watch
// answer (normally well under a second). The bound across nodes is
//
//	balance ≥ −Σ_nodes(C_i × Pmax) − S(D)
//
// where S(D) is what the other nodes spend during that propagation delay D. While the
// control plane is unreachable D is unbounded and each node keeps admitting on its last
// known balance minus its own spend, so the worst case is −(N−1)×B − N×C×Pmax for a balance
// B: the design prefers availability, and spool age is the alert that this window is open.
package meter

package publish

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/sekgate/gateway/shared/residency"
	"github.com/sekgate/gateway/shared/snapshot"
)

// Filter returns the part of s a node in country may serve: the accounts whose residency
// policy admits country, their keys and balances, every model (the catalogue is public)
// and the routes those accounts may use (a model one of them may use, at a location its
// policy admits). The other accounts' keys are listed in Elsewhere by ID, policy and hash
// prefix only, so the node can send their holders to the right region. The result states
// country, has its own hash and is unsigned; s is not modified.
func Filter(s *snapshot.Snapshot, country string) (*snapshot.Snapshot, error) {
	out := *s
	out.Signature = ""
	out.Country = country
	kept := make(map[string]bool, len(s.Accounts))
	// policies lists, per model ID, the residency policies of kept accounts that may use it.
	policies := map[string][]string{}
	out.Accounts = nil
	for _, a := range s.Accounts {
		if !residency.Satisfies(a.Residency, country) {
			continue
		}
		kept[a.ID] = true
		out.Accounts = append(out.Accounts, a)
		for _, m := range a.Models {
			if !contains(policies[m], a.Residency) {
				policies[m] = append(policies[m], a.Residency)
			}
		}
	}
	policy := make(map[string]string, len(s.Accounts))
	for _, a := range s.Accounts {
		policy[a.ID] = a.Residency
	}
	out.Keys, out.Elsewhere = nil, nil
	for _, k := range s.Keys {
		if kept[k.AccountID] {
			out.Keys = append(out.Keys, k)
			continue
		}
		if p, ok := policy[k.AccountID]; ok && len(k.Hash) >= 8 {
			out.Elsewhere = append(out.Elsewhere, snapshot.ElsewhereKey{ID: k.ID, Residency: p, HashPrefix: k.Hash[:8]})
		}
	}
	out.Balances = nil
	for _, b := range s.Balances {
		if kept[b.AccountID] {
			out.Balances = append(out.Balances, b)
		}
	}
	out.Spent = nil
	for _, x := range s.Spent {
		if kept[x.AccountID] {
			out.Spent = append(out.Spent, x)
		}
	}
	out.Routes = nil
	for _, r := range s.Routes {
		for _, p := range policies[r.Model] {
			if residency.Satisfies(p, r.Country) {
				out.Routes = append(out.Routes, r)
				break
			}
		}
	}
	// Empty lists encode as [] like the compiled snapshot's, not null.
	out.Accounts, out.Keys = nonNil(out.Accounts), nonNil(out.Keys)
	out.Balances, out.Routes = nonNil(out.Balances), nonNil(out.Routes)
	h, err := snapshot.ComputeHash(&out.Content)
	if err != nil {
		return nil, fmt.Errorf("filter snapshot %d for %s: %w", s.Version, country, err)
	}
	out.Hash = h
	return &out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// variant returns cur filtered for country and for the node's internal protocol (see
// forProtocol), signed and encoded, from the cache of cur's variants (built on first use;
// the cache is dropped when cur is replaced). An empty country and the current protocol
// is cur itself.
func (p *Publisher) variant(cur *Current, country string, protocol int) (*Current, error) {
	old := oldProtocol(cur.Snapshot, protocol)
	if country == "" && old == 0 {
		return cur, nil
	}
	key := country
	if old != 0 {
		key += "/" + strconv.Itoa(old)
	}
	p.vmu.Lock()
	defer p.vmu.Unlock()
	if p.variantsOf != cur {
		p.variantsOf, p.variants = cur, map[string]*Current{}
	}
	if v := p.variants[key]; v != nil {
		return v, nil
	}
	s := cur.Snapshot
	var err error
	if country != "" {
		if s, err = Filter(s, country); err != nil {
			return nil, err
		}
	}
	if old != 0 {
		if s, err = forOldProtocol(s, old); err != nil {
			return nil, err
		}
	}
	if p.cfg.Signer != nil {
		s.Sign(p.cfg.Signer)
	}
	sh, err := snapshot.StructureHash(&s.Content)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot %d for %q: %w", s.Version, key, err)
	}
	v := &Current{Snapshot: s, JSON: b, StructHash: sh}
	p.variants[key] = v
	return v, nil
}

// oldProtocol returns the internal protocol version (1 or 2) whose nodes must be sent s
// without what their version cannot read, or 0 when s can go as it is: nodes verify a
// snapshot's hash over the content they decode, so a field they do not know would make
// them refuse it. Version 1 knows neither revoked keys nor budgets, version 2 no budgets.
// protocol 0 (not stated) is the current one.
func oldProtocol(s *snapshot.Snapshot, protocol int) int {
	switch {
	case protocol == 1 && (len(s.Revoked) > 0 || hasBudgets(s)):
		return 1
	case protocol == 2 && hasBudgets(s):
		return 2
	}
	return 0
}

// hasBudgets reports whether s holds a budget or budget spend.
func hasBudgets(s *snapshot.Snapshot) bool {
	if len(s.Spent) > 0 {
		return true
	}
	for i := range s.Accounts {
		if s.Accounts[i].Budget != nil {
			return true
		}
	}
	for i := range s.Keys {
		if s.Keys[i].Budget != nil {
			return true
		}
	}
	return false
}

// forOldProtocol is a copy of s for nodes of protocol version: without budgets, and for
// version 1 without revoked keys, rehashed and unsigned.
func forOldProtocol(s *snapshot.Snapshot, version int) (*snapshot.Snapshot, error) {
	out := *s
	out.Signature, out.Spent = "", nil
	if version < 2 {
		out.Revoked = nil
	}
	out.Accounts = slices.Clone(s.Accounts)
	for i := range out.Accounts {
		out.Accounts[i].Budget = nil
	}
	out.Keys = slices.Clone(s.Keys)
	for i := range out.Keys {
		out.Keys[i].Budget = nil
	}
	h, err := snapshot.ComputeHash(&out.Content)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d for protocol %d: %w", s.Version, version, err)
	}
	out.Hash = h
	return &out, nil
}

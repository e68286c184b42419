-- Where a route's replicas come from (shared/snapshot.Route.Discovery): '' the one server
-- of its base URL, 'dns' the A/AAAA records of the base URL's host, 'dns-srv' the SRV
-- records it names (docs/routing.md, replicas discovered from DNS).
ALTER TABLE routes ADD COLUMN discovery text NOT NULL DEFAULT ''
	CONSTRAINT routes_discovery_known CHECK (discovery IN ('', 'dns', 'dns-srv'));

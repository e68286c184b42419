-- Route opt-ins for request values nodes refuse by default: chat content that makes the
-- upstream fetch remote media, and provider extension fields known to be dangerous on
-- common model servers (names from shared/snapshot.Extensions, checked by the catalogue).
ALTER TABLE routes ADD COLUMN allow_remote_media boolean NOT NULL DEFAULT false;
ALTER TABLE routes ADD COLUMN allow_extensions text[] NOT NULL DEFAULT '{}';

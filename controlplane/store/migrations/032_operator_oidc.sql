-- Console sign-in through an OpenID Connect provider: an operator may carry the email its
-- provider vouches for (unique, lower case), and an operator made by such a sign-in has no
-- password (password_hash ''), so password login is refused for it. A session records how
-- it began, so the audit log can tell a password session from a provider's.
ALTER TABLE operators ADD COLUMN email text UNIQUE CHECK (email = lower(email) AND email ~ '^[^@\s]+@[^@\s]+$');
ALTER TABLE operators DROP CONSTRAINT operators_password_hash_check;
ALTER TABLE operators ADD CONSTRAINT operators_password_hash_check
	CHECK (password_hash LIKE '$argon2id$%' OR (password_hash = '' AND email IS NOT NULL));
ALTER TABLE operator_sessions ADD COLUMN via text NOT NULL DEFAULT 'password' CHECK (via IN ('password', 'oidc'));

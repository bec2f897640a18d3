-- The schema every migration together makes (sqlite), written by tests/support/schema.py;
-- tests/integration/db/test_schema.py checks that a migrated database has exactly this.

CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

CREATE TABLE api_usage (
	user_id BIGINT NOT NULL, 
	day INTEGER NOT NULL, 
	requests INTEGER DEFAULT '0' NOT NULL, 
	downloads INTEGER DEFAULT '0' NOT NULL, 
	PRIMARY KEY (user_id, day), 
	FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE TABLE batch_log (
	id INTEGER NOT NULL, 
	range_id BIGINT NOT NULL, 
	epoch BIGINT NOT NULL, 
	node_id BIGINT NOT NULL, 
	from_id BIGINT NOT NULL, 
	to_id BIGINT NOT NULL, 
	headers BIGINT NOT NULL, 
	result TEXT NOT NULL, 
	stored_at DOUBLE NOT NULL, lease_expires_at DOUBLE, 
	PRIMARY KEY (id), 
	CONSTRAINT batch_log_once UNIQUE (range_id, epoch, from_id), 
	FOREIGN KEY(range_id) REFERENCES ranges (id) ON DELETE CASCADE
);

CREATE TABLE claims_revoked (
	node_id BIGINT NOT NULL, 
	claim TEXT NOT NULL, 
	revoked_at DOUBLE NOT NULL, 
	PRIMARY KEY (node_id, claim)
);

CREATE TABLE fetched_chunks (
	range_id BIGINT NOT NULL, 
	chunk_from BIGINT NOT NULL, 
	chunk_to BIGINT NOT NULL, 
	lines BIGINT NOT NULL, 
	gaps BIGINT NOT NULL, 
	bytes BIGINT NOT NULL, 
	encoding TEXT NOT NULL, 
	fetched_at DOUBLE NOT NULL, 
	PRIMARY KEY (range_id, chunk_from), 
	FOREIGN KEY(range_id) REFERENCES ranges (id) ON DELETE CASCADE
);

CREATE TABLE group_leases (
	group_id BIGINT NOT NULL, 
	lane TEXT NOT NULL, 
	node_id BIGINT, 
	epoch BIGINT DEFAULT '0' NOT NULL, 
	leased_at DOUBLE, 
	heartbeat_at DOUBLE, 
	range_id BIGINT, 
	snapshot_next BIGINT, 
	snapshot_size BIGINT, 
	snapshot_location TEXT, 
	snapshot_at DOUBLE, 
	previous_next BIGINT, 
	previous_size BIGINT, 
	previous_location TEXT, 
	headers BIGINT DEFAULT '0' NOT NULL, claim TEXT, 
	PRIMARY KEY (group_id, lane), 
	CONSTRAINT group_leases_lane CHECK (lane IN ('history', 'tail')), 
	FOREIGN KEY(group_id) REFERENCES groups (id) ON DELETE CASCADE, 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE groups (
	id INTEGER NOT NULL, 
	name TEXT NOT NULL, 
	enabled BOOLEAN DEFAULT 1 NOT NULL, 
	capture BOOLEAN DEFAULT 0 NOT NULL, 
	backfill_articles BIGINT, 
	low_water BIGINT, 
	high_water BIGINT, 
	tail_next BIGINT, 
	history_low BIGINT, 
	headers_history BIGINT DEFAULT '0' NOT NULL, 
	headers_tail BIGINT DEFAULT '0' NOT NULL, 
	error TEXT, 
	created_at DOUBLE NOT NULL, backfill_days DOUBLE, backfill_since DOUBLE, backfill_article BIGINT, 
	PRIMARY KEY (id), 
	UNIQUE (name)
);

CREATE TABLE lane_log (
	id INTEGER NOT NULL, 
	group_id BIGINT NOT NULL, 
	lane TEXT NOT NULL, 
	epoch BIGINT NOT NULL, 
	node_id BIGINT NOT NULL, 
	granted_at DOUBLE NOT NULL, 
	took_over BOOLEAN NOT NULL, 
	ended_at DOUBLE, 
	end_reason TEXT, claim TEXT, 
	PRIMARY KEY (id), 
	CONSTRAINT lane_log_once UNIQUE (group_id, lane, epoch), 
	FOREIGN KEY(group_id) REFERENCES groups (id) ON DELETE CASCADE
);

CREATE TABLE lease_clock (
	id INTEGER NOT NULL, 
	boot_id TEXT NOT NULL, 
	offset_seconds DOUBLE NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT lease_clock_one_row CHECK (id = 1)
);

CREATE TABLE lease_log (
	id INTEGER NOT NULL, 
	range_id BIGINT NOT NULL, 
	group_id BIGINT NOT NULL, 
	epoch BIGINT NOT NULL, 
	node_id BIGINT NOT NULL, 
	granted_at DOUBLE NOT NULL, 
	took_over BOOLEAN NOT NULL, 
	ended_at DOUBLE, 
	end_reason TEXT, lane_epoch BIGINT, claim TEXT, 
	PRIMARY KEY (id), 
	CONSTRAINT lease_log_once UNIQUE (range_id, epoch), 
	FOREIGN KEY(range_id) REFERENCES ranges (id) ON DELETE CASCADE
);

CREATE TABLE loose_runs (
	"key" TEXT NOT NULL, 
	group_name TEXT NOT NULL, 
	groups TEXT NOT NULL, 
	poster TEXT NOT NULL, 
	first_article INTEGER NOT NULL, 
	last_article INTEGER NOT NULL, 
	first_date BIGINT, 
	last_date BIGINT, 
	articles INTEGER NOT NULL, 
	max_size BIGINT NOT NULL, 
	segments BLOB NOT NULL, 
	updated_at DOUBLE NOT NULL, 
	PRIMARY KEY ("key")
);

CREATE TABLE nodes (
	id INTEGER NOT NULL, 
	name TEXT NOT NULL, 
	token_hash TEXT NOT NULL, 
	enabled BOOLEAN DEFAULT 1 NOT NULL, 
	created_at DOUBLE NOT NULL, 
	last_seen_at DOUBLE, 
	PRIMARY KEY (id), 
	UNIQUE (name), 
	UNIQUE (token_hash)
);

CREATE TABLE ownership_leases (
	name TEXT NOT NULL, 
	holder TEXT, 
	epoch BIGINT DEFAULT '0' NOT NULL, 
	acquired_at DOUBLE, 
	renewed_at DOUBLE, 
	expires_at DOUBLE, 
	meta TEXT DEFAULT '{}' NOT NULL, 
	PRIMARY KEY (name)
);

CREATE TABLE plain_chunks (
	range_id BIGINT NOT NULL, 
	chunk_from BIGINT NOT NULL, 
	reports INTEGER DEFAULT '1' NOT NULL, 
	fetched_plain_at DOUBLE, plain_crc BIGINT, 
	PRIMARY KEY (range_id, chunk_from), 
	FOREIGN KEY(range_id) REFERENCES ranges (id) ON DELETE CASCADE
);

CREATE TABLE probe_queue (
	release_key TEXT NOT NULL, 
	par2_message_id TEXT NOT NULL, 
	nfo_message_id TEXT, 
	status TEXT DEFAULT 'queued' NOT NULL, 
	attempts INTEGER DEFAULT '0' NOT NULL, 
	error TEXT, 
	created_at DOUBLE NOT NULL, 
	updated_at DOUBLE NOT NULL, articles INTEGER DEFAULT '0' NOT NULL, bytes BIGINT DEFAULT '0' NOT NULL, archive_message_id TEXT, priority INTEGER DEFAULT '0' NOT NULL, 
	PRIMARY KEY (release_key), 
	CONSTRAINT probe_queue_status CHECK (status IN ('queued', 'working', 'done', 'failed'))
);

CREATE TABLE ranges (
	id INTEGER NOT NULL, 
	group_id BIGINT NOT NULL, 
	start_id BIGINT NOT NULL, 
	end_id BIGINT NOT NULL, 
	next_id BIGINT NOT NULL, 
	priority BIGINT NOT NULL, 
	status TEXT DEFAULT 'planned' NOT NULL, 
	node_id BIGINT, 
	epoch BIGINT DEFAULT '0' NOT NULL, 
	attempts INTEGER DEFAULT '0' NOT NULL, 
	rule_version INTEGER, 
	spooled_chunks INTEGER DEFAULT '0' NOT NULL, 
	capture BOOLEAN DEFAULT 0 NOT NULL, 
	stored_at DOUBLE, 
	leased_at DOUBLE, 
	heartbeat_at DOUBLE, 
	done_at DOUBLE, 
	headers BIGINT DEFAULT '0' NOT NULL, 
	error TEXT, 
	created_at DOUBLE NOT NULL, gaps BIGINT DEFAULT '0' NOT NULL, lane_epoch BIGINT, claim TEXT, 
	PRIMARY KEY (id), 
	CONSTRAINT ranges_bounds CHECK (start_id <= end_id), 
	CONSTRAINT ranges_next_inside CHECK (next_id BETWEEN start_id AND end_id + 1), 
	CONSTRAINT ranges_status CHECK (status IN ('planned', 'leased', 'done', 'failed')), 
	CONSTRAINT ranges_group_start UNIQUE (group_id, start_id), 
	FOREIGN KEY(group_id) REFERENCES groups (id) ON DELETE CASCADE, 
	FOREIGN KEY(node_id) REFERENCES nodes (id)
);

CREATE TABLE release_aliases (
	member_key TEXT NOT NULL, 
	release_key TEXT NOT NULL, 
	created_at DOUBLE NOT NULL, 
	PRIMARY KEY (member_key)
);

CREATE TABLE releases (
	id INTEGER NOT NULL, 
	"key" TEXT NOT NULL, 
	name TEXT NOT NULL, 
	name_source TEXT DEFAULT 'subject' NOT NULL, 
	search_name TEXT NOT NULL, 
	poster TEXT NOT NULL, 
	group_name TEXT NOT NULL, 
	groups TEXT NOT NULL, 
	file_total INTEGER NOT NULL, 
	files_seen INTEGER NOT NULL, 
	files_expected INTEGER NOT NULL, 
	parts_seen BIGINT NOT NULL, 
	parts_expected BIGINT NOT NULL, 
	completion FLOAT NOT NULL, 
	complete BOOLEAN NOT NULL, 
	size BIGINT NOT NULL, 
	first_article BIGINT NOT NULL, 
	last_article BIGINT NOT NULL, 
	first_date BIGINT, 
	last_date BIGINT, 
	posted_at DOUBLE NOT NULL, 
	obfuscated BOOLEAN NOT NULL, 
	request_id TEXT, 
	password BOOLEAN, 
	category INTEGER NOT NULL, 
	season INTEGER, 
	episode INTEGER, 
	year INTEGER, 
	resolution TEXT, 
	imdb TEXT, 
	tvdbid BIGINT, 
	segments BLOB NOT NULL, 
	grabs INTEGER DEFAULT '0' NOT NULL, 
	created_at DOUBLE NOT NULL, 
	updated_at DOUBLE NOT NULL, listed_at DOUBLE, episode_last INTEGER, loose_settled BOOLEAN DEFAULT 0 NOT NULL, file_names TEXT, 
	PRIMARY KEY (id), 
	UNIQUE ("key")
);

CREATE VIRTUAL TABLE releases_fts USING fts5(search_name, content='releases', content_rowid='id', tokenize='unicode61');

CREATE TABLE rule_sets (
	version INTEGER NOT NULL, 
	rules TEXT NOT NULL, 
	note TEXT DEFAULT '' NOT NULL, 
	created_at DOUBLE NOT NULL, 
	PRIMARY KEY (version)
);

CREATE TABLE snapshot_log (
	id INTEGER NOT NULL, 
	group_id BIGINT NOT NULL, 
	lane TEXT NOT NULL, 
	epoch BIGINT NOT NULL, 
	node_id BIGINT NOT NULL, 
	next BIGINT NOT NULL, 
	size BIGINT NOT NULL, 
	location TEXT NOT NULL, 
	recorded_at DOUBLE NOT NULL, 
	lease_expires_at DOUBLE NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(group_id) REFERENCES groups (id) ON DELETE CASCADE
);

CREATE TABLE users (
	id INTEGER NOT NULL, 
	name TEXT NOT NULL, 
	api_key_hash TEXT NOT NULL, 
	enabled BOOLEAN DEFAULT 1 NOT NULL, 
	requests_per_day INTEGER, 
	downloads_per_day INTEGER, 
	created_at DOUBLE NOT NULL, 
	last_seen_at DOUBLE, password_hash TEXT, 
	PRIMARY KEY (id), 
	UNIQUE (name), 
	UNIQUE (api_key_hash)
);

CREATE TABLE web_sessions (
	token_hash TEXT NOT NULL, 
	csrf TEXT NOT NULL, 
	created_at DOUBLE NOT NULL, 
	expires_at DOUBLE NOT NULL, user_id INTEGER, 
	PRIMARY KEY (token_hash)
);

CREATE INDEX batch_log_node_stored ON batch_log (node_id, stored_at);

CREATE INDEX loose_runs_group ON loose_runs (group_name, first_article);

CREATE INDEX probe_queue_next ON probe_queue (status, priority, created_at);

CREATE INDEX ranges_claim ON ranges (claim) WHERE status = 'leased';

CREATE INDEX ranges_corpus_fill ON ranges (id) WHERE capture AND stored_at IS NULL;

CREATE INDEX ranges_lane_order ON ranges (group_id, (priority >= 0), start_id);

CREATE INDEX ranges_lease_pick ON ranges (group_id, (priority >= 0), (spooled_chunks = 0), priority, id) WHERE status IN ('planned', 'leased') AND next_id <= end_id;

CREATE INDEX ranges_live ON ranges (group_id, heartbeat_at) WHERE status = 'leased';

CREATE INDEX ranges_prefetch ON ranges ((status <> 'leased'), (spooled_chunks = 0), priority, id) WHERE status IN ('planned', 'leased') AND next_id <= end_id AND stored_at IS NULL;

CREATE INDEX release_aliases_release ON release_aliases (release_key);

CREATE INDEX releases_category_listed ON releases (category, listed_at);

CREATE INDEX releases_category_posted ON releases (category, posted_at);

CREATE TRIGGER releases_fts_delete AFTER DELETE ON releases BEGIN INSERT INTO releases_fts (releases_fts, rowid, search_name) VALUES ('delete', old.id, old.search_name); END;

CREATE TRIGGER releases_fts_update AFTER UPDATE OF search_name ON releases BEGIN INSERT INTO releases_fts (releases_fts, rowid, search_name) VALUES ('delete', old.id, old.search_name); INSERT INTO releases_fts (rowid, search_name) VALUES (new.id, new.search_name); END;

CREATE INDEX releases_group_posted ON releases (group_name, posted_at);

CREATE INDEX releases_imdb ON releases (imdb) WHERE imdb IS NOT NULL;

CREATE INDEX releases_listed ON releases (listed_at, id);

CREATE INDEX releases_loose ON releases (group_name, poster, file_total, first_article) WHERE files_seen = 1 AND file_total > 1 AND obfuscated AND NOT loose_settled;

CREATE INDEX releases_posted ON releases (posted_at, id);

CREATE INDEX releases_tvdbid ON releases (tvdbid) WHERE tvdbid IS NOT NULL;

CREATE INDEX snapshot_log_lane ON snapshot_log (group_id, lane, epoch, next);

CREATE INDEX web_sessions_expires ON web_sessions (expires_at);

CREATE INDEX web_sessions_user ON web_sessions (user_id);

INSERT INTO alembic_version VALUES('0019');

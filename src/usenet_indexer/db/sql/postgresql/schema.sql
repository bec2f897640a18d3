-- The schema every migration together makes (postgresql), written by tests/support/schema.py;
-- tests/integration/db/test_schema.py checks that a migrated database has exactly this.

CREATE FUNCTION public.group_live_leases(p_group bigint, p_ttl double precision, p_except bigint) RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_leased int;
  v_lapsed int;
BEGIN
  SELECT count(*) INTO v_leased FROM ranges
  WHERE group_id = p_group AND status = 'leased' AND id <> p_except;
  SELECT count(*) INTO v_lapsed FROM (
    SELECT 1 FROM ranges
    WHERE group_id = p_group AND status = 'leased' AND id <> p_except
      AND heartbeat_at < lease_now() - p_ttl
    FOR NO KEY UPDATE SKIP LOCKED
  ) lapsed;
  -- Between the two counts only fewer leases can be held (every grant in the group needs the lock
  -- the caller holds), so the difference errs towards live: at worst a grant waits for a later call.
  RETURN v_leased - v_lapsed;
END
$$;

CREATE FUNCTION public.lease_boot() RETURNS bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_boot bigint;
BEGIN
  SELECT a.boot INTO v_boot FROM lease_boot_alive a;
  IF FOUND THEN
    RETURN v_boot;
  END IF;
  PERFORM 1 FROM lease_boot b FOR UPDATE;
  SELECT a.boot INTO v_boot FROM lease_boot_alive a;
  IF FOUND THEN
    RETURN v_boot;
  END IF;
  UPDATE lease_boot b SET boot = b.boot + 1 RETURNING b.boot INTO v_boot;
  INSERT INTO lease_boot_alive (id, boot) VALUES (1, v_boot);
  PERFORM set_config('synchronous_commit', 'on', true);
  RETURN v_boot;
END
$$;

CREATE FUNCTION public.lease_now() RETURNS double precision
    LANGUAGE sql
    AS $$
  SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8
         + COALESCE(NULLIF(current_setting('usenet_indexer.clock_offset', true), '')::float8, 0)
$$;

CREATE FUNCTION public.lease_take(p_node bigint, p_ttl double precision, p_max integer, p_history boolean, p_claim text) RETURNS TABLE(range_id bigint, group_id bigint, group_name text, start_id bigint, end_id bigint, next_id bigint, epoch bigint, priority bigint, rule_version integer, took_over boolean, replayed boolean)
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_skip bigint[] := '{}';
  v_group bigint;
  v_now float8;
  v_pick record;
  v_granted record;
BEGIN
  IF p_claim IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_claim, 0));
    IF EXISTS (SELECT 1 FROM claims_revoked c WHERE c.node_id = p_node AND c.claim = p_claim) THEN
      RETURN;
    END IF;
    -- A plain range lease only (lane_epoch NULL): a lane's next range is asked for elsewhere.
    RETURN QUERY
      SELECT r.id, r.group_id, g.name, r.start_id, r.end_id, r.next_id, r.epoch, r.priority,
             r.rule_version, COALESCE(l.took_over, false), true
      FROM ranges r JOIN groups g ON g.id = r.group_id
      LEFT JOIN lease_log l ON l.range_id = r.id AND l.epoch = r.epoch
      WHERE r.claim = p_claim AND r.status = 'leased' AND r.node_id = p_node AND r.lane_epoch IS NULL
        AND r.heartbeat_at >= lease_now() - p_ttl
      LIMIT 1;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  FOR attempt IN 1..16 LOOP
    -- 1. The group holding the best candidate (spooled first, by priority, then id), locked; a group
    -- another grant is busy with is passed over, not waited for.
    v_now := lease_now();
    SELECT g.id INTO v_group
    FROM groups g
    CROSS JOIN (VALUES (false), (true)) AS lanes(history)
    CROSS JOIN LATERAL (
      SELECT r.id, r.spooled_chunks, r.priority
      FROM ranges r
      WHERE r.group_id = g.id AND (r.priority >= 0) = lanes.history
        AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
        AND (r.status = 'planned' OR r.heartbeat_at < v_now - p_ttl)
      ORDER BY (r.spooled_chunks = 0), r.priority, r.id
      LIMIT 1
    ) c
    WHERE g.enabled AND g.id <> ALL (v_skip)
      AND (p_history OR NOT lanes.history)
      AND NOT EXISTS (
        SELECT 1 FROM group_leases h
        WHERE h.group_id = g.id AND h.node_id IS NOT NULL AND h.heartbeat_at >= v_now - p_ttl
          AND h.lane = CASE WHEN lanes.history THEN 'history' ELSE 'tail' END)
      AND (SELECT count(*) FROM ranges l
           WHERE l.group_id = g.id AND l.status = 'leased' AND l.heartbeat_at >= v_now - p_ttl) < p_max
    ORDER BY (c.spooled_chunks = 0), c.priority, c.id
    LIMIT 1
    FOR NO KEY UPDATE OF g SKIP LOCKED;
    IF v_group IS NULL THEN
      RETURN;
    END IF;

    -- 2. With the group locked and a new snapshot: its live leases, then its best range, locked.
    IF group_live_leases(v_group, p_ttl, 0) < p_max THEN
      v_now := lease_now();
      SELECT c.id, c.epoch, c.status, c.heartbeat_at INTO v_pick
      FROM (VALUES (false), (true)) AS lanes(history)
      CROSS JOIN LATERAL (
        SELECT r.id, r.epoch, r.status, r.heartbeat_at, r.spooled_chunks, r.priority
        FROM ranges r
        WHERE r.group_id = v_group AND (r.priority >= 0) = lanes.history
          AND r.status IN ('planned', 'leased') AND r.next_id <= r.end_id
          AND (r.status = 'planned' OR r.heartbeat_at < v_now - p_ttl)
        ORDER BY (r.spooled_chunks = 0), r.priority, r.id
        LIMIT 1
        FOR NO KEY UPDATE OF r SKIP LOCKED
      ) c
      WHERE (p_history OR NOT lanes.history)
        AND NOT EXISTS (
          SELECT 1 FROM group_leases h
          WHERE h.group_id = v_group AND h.node_id IS NOT NULL AND h.heartbeat_at >= v_now - p_ttl
            AND h.lane = CASE WHEN lanes.history THEN 'history' ELSE 'tail' END)
      ORDER BY (c.spooled_chunks = 0), c.priority, c.id
      LIMIT 1;
      IF FOUND THEN
        -- The row is ours: the update re-reads it, unchanged since the pick or nothing is granted.
        UPDATE ranges r
        SET status = 'leased', node_id = p_node, epoch = r.epoch + 1, attempts = r.attempts + 1,
            leased_at = v_now, heartbeat_at = v_now, lane_epoch = NULL, claim = p_claim,
            rule_version = (SELECT COALESCE(MAX(version), 0) FROM rule_sets)
        WHERE r.id = v_pick.id AND r.epoch = v_pick.epoch AND r.status = v_pick.status
          AND r.next_id <= r.end_id
          AND (r.status = 'planned' OR r.heartbeat_at < v_now - p_ttl)
        RETURNING r.id, r.group_id, r.start_id, r.end_id, r.next_id, r.epoch, r.priority, r.rule_version
        INTO v_granted;
        IF NOT FOUND THEN
          -- Changed since the pick (a release, a heartbeat): the same group again.
          CONTINUE;
        END IF;
        UPDATE nodes SET last_seen_at = v_now
        WHERE id = p_node AND (last_seen_at IS NULL OR last_seen_at < v_now - 5);
        IF v_pick.status = 'leased' THEN
          UPDATE lease_log l SET ended_at = v_pick.heartbeat_at + p_ttl, end_reason = 'expired'
          WHERE l.range_id = v_pick.id AND l.epoch = v_pick.epoch AND l.ended_at IS NULL;
        END IF;
        INSERT INTO lease_log (range_id, group_id, epoch, node_id, granted_at, took_over, claim)
        VALUES (v_granted.id, v_granted.group_id, v_granted.epoch, p_node, v_now, v_pick.status = 'leased',
                p_claim);
        RETURN QUERY
          SELECT v_granted.id, v_granted.group_id, g.name, v_granted.start_id, v_granted.end_id,
                 v_granted.next_id, v_granted.epoch, v_granted.priority, v_granted.rule_version,
                 v_pick.status = 'leased', false
          FROM groups g WHERE g.id = v_granted.group_id;
        RETURN;
      END IF;
    END IF;
    -- At its cap, emptied meanwhile, or every candidate busy: look at the other groups.
    v_skip := v_skip || v_group;
  END LOOP;
END
$$;

CREATE FUNCTION public.ownership_hold(p_name text, p_holder text, p_epoch bigint, p_now double precision) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM ownership_leases o WHERE o.name = p_name FOR SHARE;
  PERFORM 1 FROM ownership_leases o
  WHERE o.name = p_name AND o.holder = p_holder AND o.epoch = p_epoch AND o.expires_at >= COALESCE(p_now, lease_now());
  IF NOT FOUND THEN
    RAISE EXCEPTION 'ownership lease % is no longer held by % at epoch %', p_name, p_holder, p_epoch
      USING ERRCODE = 'UI001';
  END IF;
END
$$;

CREATE FUNCTION public.range_finish(p_range bigint, p_node bigint, p_epoch bigint, p_ttl double precision) RETURNS TABLE(id bigint, group_id bigint, priority bigint, headers bigint)
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM groups g WHERE g.id = (SELECT r.group_id FROM ranges r WHERE r.id = p_range)
  FOR NO KEY UPDATE;
  PERFORM 1 FROM ranges r WHERE r.id = p_range FOR NO KEY UPDATE;
  RETURN QUERY
  WITH done AS (
    UPDATE ranges r SET status = 'done', done_at = lease_now(), heartbeat_at = lease_now(), node_id = NULL
    WHERE r.id = p_range AND r.node_id = p_node AND r.epoch = p_epoch AND r.status = 'leased'
      AND r.heartbeat_at >= lease_now() - p_ttl AND r.next_id > r.end_id
    RETURNING r.id, r.group_id, r.priority, r.headers, r.done_at
  ),
  logged AS (
    UPDATE lease_log l SET ended_at = done.done_at, end_reason = 'finished' FROM done
    WHERE l.range_id = done.id AND l.epoch = p_epoch AND l.ended_at IS NULL
  ),
  counted AS (
    UPDATE groups g
    SET headers_history = g.headers_history + CASE WHEN done.priority >= 0 THEN done.headers ELSE 0 END,
        headers_tail = g.headers_tail + CASE WHEN done.priority < 0 THEN done.headers ELSE 0 END
    FROM done WHERE g.id = done.group_id
  ),
  lane AS (
    UPDATE group_leases gl SET headers = gl.headers + done.headers FROM done
    WHERE gl.group_id = done.group_id AND gl.lane = CASE WHEN done.priority < 0 THEN 'tail' ELSE 'history' END
  )
  SELECT done.id::bigint, done.group_id::bigint, done.priority::bigint, done.headers::bigint FROM done;
END
$$;

CREATE FUNCTION public.range_give_back(p_range bigint, p_node bigint, p_epoch bigint, p_ttl double precision, p_reason text, p_claim text) RETURNS TABLE(id bigint, now double precision)
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM ranges r WHERE r.id = p_range FOR NO KEY UPDATE;
  RETURN QUERY
  WITH released AS (
    UPDATE ranges r SET status = 'planned', node_id = NULL, lane_epoch = NULL
    WHERE r.id = p_range AND r.node_id = p_node AND r.epoch = p_epoch AND r.status = 'leased'
      AND r.heartbeat_at >= lease_now() - p_ttl AND r.next_id <= r.end_id
      AND (p_claim IS NULL OR r.claim = p_claim)
    RETURNING r.id, lease_now() AS now
  ),
  logged AS (
    UPDATE lease_log l SET ended_at = released.now, end_reason = p_reason FROM released
    WHERE l.range_id = released.id AND l.epoch = p_epoch AND l.ended_at IS NULL
  )
  SELECT released.id::bigint, released.now FROM released;
END
$$;

CREATE FUNCTION public.range_heartbeat(p_range bigint, p_node bigint, p_epoch bigint, p_ttl double precision) RETURNS TABLE(range_id bigint)
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM ranges r WHERE r.id = p_range FOR NO KEY UPDATE;
  RETURN QUERY
  WITH beat AS (
    UPDATE ranges r SET heartbeat_at = lease_now()
    WHERE r.id = p_range AND r.node_id = p_node AND r.epoch = p_epoch AND r.status = 'leased'
      AND r.heartbeat_at >= lease_now() - p_ttl
    RETURNING r.id
  ),
  seen AS (
    UPDATE nodes n SET last_seen_at = lease_now()
    WHERE n.id = p_node AND EXISTS (SELECT 1 FROM beat)
      AND (n.last_seen_at IS NULL OR n.last_seen_at < lease_now() - 5)
  )
  SELECT beat.id::bigint FROM beat;
END
$$;

CREATE FUNCTION public.ranges_epoch_unique() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_boot bigint := lease_boot();
BEGIN
  NEW.epoch := NEW.epoch + (v_boot - OLD.granted_boot);
  NEW.granted_boot := v_boot;
  IF OLD.status <> 'planned' THEN
    -- A takeover: durable, so that a run loses at most one bump of a range (above).
    PERFORM set_config('synchronous_commit', 'on', true);
  END IF;
  RETURN NEW;
END
$$;

CREATE TABLE public.alembic_version (
    version_num character varying(32) NOT NULL
);

CREATE TABLE public.api_usage (
    user_id bigint NOT NULL,
    day integer NOT NULL,
    requests integer DEFAULT 0 NOT NULL,
    downloads integer DEFAULT 0 NOT NULL
);

CREATE TABLE public.batch_log (
    id bigint NOT NULL,
    range_id bigint NOT NULL,
    epoch bigint NOT NULL,
    node_id bigint NOT NULL,
    from_id bigint NOT NULL,
    to_id bigint NOT NULL,
    headers bigint NOT NULL,
    result text NOT NULL,
    stored_at double precision NOT NULL,
    lease_expires_at double precision
);

CREATE SEQUENCE public.batch_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.batch_log_id_seq OWNED BY public.batch_log.id;

CREATE TABLE public.claims_revoked (
    node_id bigint NOT NULL,
    claim text NOT NULL,
    revoked_at double precision NOT NULL
);

CREATE TABLE public.fetched_chunks (
    range_id bigint NOT NULL,
    chunk_from bigint NOT NULL,
    chunk_to bigint NOT NULL,
    lines bigint NOT NULL,
    gaps bigint NOT NULL,
    bytes bigint NOT NULL,
    encoding text NOT NULL,
    fetched_at double precision NOT NULL
);

CREATE TABLE public.group_leases (
    group_id bigint NOT NULL,
    lane text NOT NULL,
    node_id bigint,
    epoch bigint DEFAULT '0'::bigint NOT NULL,
    leased_at double precision,
    heartbeat_at double precision,
    range_id bigint,
    snapshot_next bigint,
    snapshot_size bigint,
    snapshot_location text,
    snapshot_at double precision,
    previous_next bigint,
    previous_size bigint,
    previous_location text,
    headers bigint DEFAULT '0'::bigint NOT NULL,
    claim text,
    CONSTRAINT group_leases_lane CHECK ((lane = ANY (ARRAY['history'::text, 'tail'::text])))
);

CREATE TABLE public.groups (
    id bigint NOT NULL,
    name text NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    capture boolean DEFAULT false NOT NULL,
    backfill_articles bigint,
    low_water bigint,
    high_water bigint,
    tail_next bigint,
    history_low bigint,
    headers_history bigint DEFAULT '0'::bigint NOT NULL,
    headers_tail bigint DEFAULT '0'::bigint NOT NULL,
    error text,
    created_at double precision NOT NULL,
    backfill_days double precision,
    backfill_since double precision,
    backfill_article bigint
);

CREATE SEQUENCE public.groups_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.groups_id_seq OWNED BY public.groups.id;

CREATE TABLE public.lane_log (
    id bigint NOT NULL,
    group_id bigint NOT NULL,
    lane text NOT NULL,
    epoch bigint NOT NULL,
    node_id bigint NOT NULL,
    granted_at double precision NOT NULL,
    took_over boolean NOT NULL,
    ended_at double precision,
    end_reason text,
    claim text
);

CREATE SEQUENCE public.lane_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.lane_log_id_seq OWNED BY public.lane_log.id;

CREATE TABLE public.lease_boot (
    id integer NOT NULL,
    boot bigint NOT NULL,
    CONSTRAINT lease_boot_id_check CHECK ((id = 1))
);

CREATE UNLOGGED TABLE public.lease_boot_alive (
    id integer NOT NULL,
    boot bigint NOT NULL,
    CONSTRAINT lease_boot_alive_id_check CHECK ((id = 1))
);

CREATE TABLE public.lease_log (
    id bigint NOT NULL,
    range_id bigint NOT NULL,
    group_id bigint NOT NULL,
    epoch bigint NOT NULL,
    node_id bigint NOT NULL,
    granted_at double precision NOT NULL,
    took_over boolean NOT NULL,
    ended_at double precision,
    end_reason text,
    lane_epoch bigint,
    claim text
);

CREATE SEQUENCE public.lease_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.lease_log_id_seq OWNED BY public.lease_log.id;

CREATE TABLE public.loose_runs (
    key text NOT NULL,
    group_name text NOT NULL,
    groups text NOT NULL,
    poster text NOT NULL,
    first_article bigint NOT NULL,
    last_article bigint NOT NULL,
    first_date bigint,
    last_date bigint,
    articles integer NOT NULL,
    max_size bigint NOT NULL,
    segments bytea NOT NULL,
    updated_at double precision NOT NULL
);

CREATE TABLE public.nodes (
    id bigint NOT NULL,
    name text NOT NULL,
    token_hash text NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    created_at double precision NOT NULL,
    last_seen_at double precision
);

CREATE SEQUENCE public.nodes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.nodes_id_seq OWNED BY public.nodes.id;

CREATE TABLE public.ownership_leases (
    name text NOT NULL,
    holder text,
    epoch bigint DEFAULT '0'::bigint NOT NULL,
    acquired_at double precision,
    renewed_at double precision,
    expires_at double precision,
    meta text DEFAULT '{}'::text NOT NULL
);

CREATE TABLE public.plain_chunks (
    range_id bigint NOT NULL,
    chunk_from bigint NOT NULL,
    reports integer DEFAULT 1 NOT NULL,
    fetched_plain_at double precision,
    plain_crc bigint
);

CREATE TABLE public.probe_queue (
    release_key text NOT NULL,
    par2_message_id text NOT NULL,
    nfo_message_id text,
    status text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    error text,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    articles integer DEFAULT 0 NOT NULL,
    bytes bigint DEFAULT '0'::bigint NOT NULL,
    archive_message_id text,
    priority integer DEFAULT 0 NOT NULL,
    CONSTRAINT probe_queue_status CHECK ((status = ANY (ARRAY['queued'::text, 'working'::text, 'done'::text, 'failed'::text])))
);

CREATE TABLE public.ranges (
    id bigint NOT NULL,
    group_id bigint NOT NULL,
    start_id bigint NOT NULL,
    end_id bigint NOT NULL,
    next_id bigint NOT NULL,
    priority bigint NOT NULL,
    status text DEFAULT 'planned'::text NOT NULL,
    node_id bigint,
    epoch bigint DEFAULT '0'::bigint NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    rule_version integer,
    spooled_chunks integer DEFAULT 0 NOT NULL,
    capture boolean DEFAULT false NOT NULL,
    stored_at double precision,
    leased_at double precision,
    heartbeat_at double precision,
    done_at double precision,
    headers bigint DEFAULT '0'::bigint NOT NULL,
    error text,
    created_at double precision NOT NULL,
    gaps bigint DEFAULT '0'::bigint NOT NULL,
    lane_epoch bigint,
    granted_boot bigint DEFAULT 0 NOT NULL,
    claim text,
    CONSTRAINT ranges_bounds CHECK ((start_id <= end_id)),
    CONSTRAINT ranges_next_inside CHECK (((next_id >= start_id) AND (next_id <= (end_id + 1)))),
    CONSTRAINT ranges_status CHECK ((status = ANY (ARRAY['planned'::text, 'leased'::text, 'done'::text, 'failed'::text])))
);

CREATE SEQUENCE public.ranges_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.ranges_id_seq OWNED BY public.ranges.id;

CREATE TABLE public.release_aliases (
    member_key text NOT NULL,
    release_key text NOT NULL,
    created_at double precision NOT NULL
);

CREATE TABLE public.releases (
    id bigint NOT NULL,
    key text NOT NULL,
    name text NOT NULL,
    name_source text DEFAULT 'subject'::text NOT NULL,
    search_name text NOT NULL,
    poster text NOT NULL,
    group_name text NOT NULL,
    groups text NOT NULL,
    file_total integer NOT NULL,
    files_seen integer NOT NULL,
    files_expected integer NOT NULL,
    parts_seen bigint NOT NULL,
    parts_expected bigint NOT NULL,
    completion double precision NOT NULL,
    complete boolean NOT NULL,
    size bigint NOT NULL,
    first_article bigint NOT NULL,
    last_article bigint NOT NULL,
    first_date bigint,
    last_date bigint,
    posted_at double precision NOT NULL,
    obfuscated boolean NOT NULL,
    request_id text,
    password boolean,
    category integer NOT NULL,
    season integer,
    episode integer,
    year integer,
    resolution text,
    imdb text,
    tvdbid bigint,
    segments bytea NOT NULL,
    grabs integer DEFAULT 0 NOT NULL,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    search_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_name)) STORED,
    listed_at double precision,
    episode_last integer,
    loose_settled boolean DEFAULT false NOT NULL,
    file_names text
);

CREATE SEQUENCE public.releases_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.releases_id_seq OWNED BY public.releases.id;

CREATE TABLE public.rule_sets (
    version integer NOT NULL,
    rules text NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    created_at double precision NOT NULL
);

CREATE TABLE public.snapshot_log (
    id bigint NOT NULL,
    group_id bigint NOT NULL,
    lane text NOT NULL,
    epoch bigint NOT NULL,
    node_id bigint NOT NULL,
    next bigint NOT NULL,
    size bigint NOT NULL,
    location text NOT NULL,
    recorded_at double precision NOT NULL,
    lease_expires_at double precision NOT NULL
);

CREATE SEQUENCE public.snapshot_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.snapshot_log_id_seq OWNED BY public.snapshot_log.id;

CREATE TABLE public.users (
    id bigint NOT NULL,
    name text NOT NULL,
    api_key_hash text NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    requests_per_day integer,
    downloads_per_day integer,
    created_at double precision NOT NULL,
    last_seen_at double precision,
    password_hash text
);

CREATE SEQUENCE public.users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.users_id_seq OWNED BY public.users.id;

CREATE TABLE public.web_sessions (
    token_hash text NOT NULL,
    csrf text NOT NULL,
    created_at double precision NOT NULL,
    expires_at double precision NOT NULL,
    user_id integer
);

ALTER TABLE ONLY public.batch_log ALTER COLUMN id SET DEFAULT nextval('public.batch_log_id_seq'::regclass);

ALTER TABLE ONLY public.groups ALTER COLUMN id SET DEFAULT nextval('public.groups_id_seq'::regclass);

ALTER TABLE ONLY public.lane_log ALTER COLUMN id SET DEFAULT nextval('public.lane_log_id_seq'::regclass);

ALTER TABLE ONLY public.lease_log ALTER COLUMN id SET DEFAULT nextval('public.lease_log_id_seq'::regclass);

ALTER TABLE ONLY public.nodes ALTER COLUMN id SET DEFAULT nextval('public.nodes_id_seq'::regclass);

ALTER TABLE ONLY public.ranges ALTER COLUMN id SET DEFAULT nextval('public.ranges_id_seq'::regclass);

ALTER TABLE ONLY public.releases ALTER COLUMN id SET DEFAULT nextval('public.releases_id_seq'::regclass);

ALTER TABLE ONLY public.snapshot_log ALTER COLUMN id SET DEFAULT nextval('public.snapshot_log_id_seq'::regclass);

ALTER TABLE ONLY public.users ALTER COLUMN id SET DEFAULT nextval('public.users_id_seq'::regclass);

ALTER TABLE ONLY public.alembic_version
    ADD CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num);

ALTER TABLE ONLY public.api_usage
    ADD CONSTRAINT api_usage_pkey PRIMARY KEY (user_id, day);

ALTER TABLE ONLY public.batch_log
    ADD CONSTRAINT batch_log_once UNIQUE (range_id, epoch, from_id);

ALTER TABLE ONLY public.batch_log
    ADD CONSTRAINT batch_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.claims_revoked
    ADD CONSTRAINT claims_revoked_pkey PRIMARY KEY (node_id, claim);

ALTER TABLE ONLY public.fetched_chunks
    ADD CONSTRAINT fetched_chunks_pkey PRIMARY KEY (range_id, chunk_from);

ALTER TABLE ONLY public.group_leases
    ADD CONSTRAINT group_leases_pkey PRIMARY KEY (group_id, lane);

ALTER TABLE ONLY public.groups
    ADD CONSTRAINT groups_name_key UNIQUE (name);

ALTER TABLE ONLY public.groups
    ADD CONSTRAINT groups_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lane_log
    ADD CONSTRAINT lane_log_once UNIQUE (group_id, lane, epoch);

ALTER TABLE ONLY public.lane_log
    ADD CONSTRAINT lane_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lease_boot_alive
    ADD CONSTRAINT lease_boot_alive_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lease_boot
    ADD CONSTRAINT lease_boot_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.lease_log
    ADD CONSTRAINT lease_log_once UNIQUE (range_id, epoch);

ALTER TABLE ONLY public.lease_log
    ADD CONSTRAINT lease_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.loose_runs
    ADD CONSTRAINT loose_runs_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_name_key UNIQUE (name);

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.ownership_leases
    ADD CONSTRAINT ownership_leases_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.plain_chunks
    ADD CONSTRAINT plain_chunks_pkey PRIMARY KEY (range_id, chunk_from);

ALTER TABLE ONLY public.probe_queue
    ADD CONSTRAINT probe_queue_pkey PRIMARY KEY (release_key);

ALTER TABLE ONLY public.ranges
    ADD CONSTRAINT ranges_group_start UNIQUE (group_id, start_id);

ALTER TABLE ONLY public.ranges
    ADD CONSTRAINT ranges_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.release_aliases
    ADD CONSTRAINT release_aliases_pkey PRIMARY KEY (member_key);

ALTER TABLE ONLY public.releases
    ADD CONSTRAINT releases_key_key UNIQUE (key);

ALTER TABLE ONLY public.releases
    ADD CONSTRAINT releases_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.rule_sets
    ADD CONSTRAINT rule_sets_pkey PRIMARY KEY (version);

ALTER TABLE ONLY public.snapshot_log
    ADD CONSTRAINT snapshot_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_api_key_hash_key UNIQUE (api_key_hash);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_name_key UNIQUE (name);

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.web_sessions
    ADD CONSTRAINT web_sessions_pkey PRIMARY KEY (token_hash);

CREATE INDEX batch_log_node_stored ON public.batch_log USING btree (node_id, stored_at);

CREATE INDEX loose_runs_group ON public.loose_runs USING btree (group_name, first_article);

CREATE INDEX probe_queue_next ON public.probe_queue USING btree (status, priority, created_at);

CREATE INDEX ranges_claim ON public.ranges USING btree (claim) WHERE (status = 'leased'::text);

CREATE INDEX ranges_corpus_fill ON public.ranges USING btree (id) WHERE (capture AND (stored_at IS NULL));

CREATE INDEX ranges_lane_order ON public.ranges USING btree (group_id, ((priority >= 0)), start_id);

CREATE INDEX ranges_lease_pick ON public.ranges USING btree (group_id, ((priority >= 0)), ((spooled_chunks = 0)), priority, id) WHERE (status = ANY (ARRAY['planned'::text, 'leased'::text]));

CREATE INDEX ranges_live ON public.ranges USING btree (group_id) WHERE (status = 'leased'::text);

CREATE INDEX ranges_prefetch ON public.ranges USING btree (((status <> 'leased'::text)), ((spooled_chunks = 0)), priority, id) WHERE ((status = ANY (ARRAY['planned'::text, 'leased'::text])) AND (stored_at IS NULL));

CREATE INDEX release_aliases_release ON public.release_aliases USING btree (release_key);

CREATE INDEX releases_category_listed ON public.releases USING btree (category, listed_at);

CREATE INDEX releases_category_posted ON public.releases USING btree (category, posted_at);

CREATE INDEX releases_group_posted ON public.releases USING btree (group_name, posted_at);

CREATE INDEX releases_imdb ON public.releases USING btree (imdb) WHERE (imdb IS NOT NULL);

CREATE INDEX releases_listed ON public.releases USING btree (listed_at, id);

CREATE INDEX releases_loose ON public.releases USING btree (group_name, poster, file_total, first_article) WHERE ((files_seen = 1) AND (file_total > 1) AND obfuscated AND (NOT loose_settled));

CREATE INDEX releases_posted ON public.releases USING btree (posted_at, id);

CREATE INDEX releases_search ON public.releases USING gin (search_vector);

CREATE INDEX releases_tvdbid ON public.releases USING btree (tvdbid) WHERE (tvdbid IS NOT NULL);

CREATE INDEX snapshot_log_lane ON public.snapshot_log USING btree (group_id, lane, epoch, next);

CREATE INDEX web_sessions_expires ON public.web_sessions USING btree (expires_at);

CREATE INDEX web_sessions_user ON public.web_sessions USING btree (user_id);

CREATE TRIGGER ranges_epoch_unique BEFORE UPDATE OF epoch ON public.ranges FOR EACH ROW WHEN ((new.epoch <> old.epoch)) EXECUTE FUNCTION public.ranges_epoch_unique();

ALTER TABLE ONLY public.api_usage
    ADD CONSTRAINT api_usage_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.batch_log
    ADD CONSTRAINT batch_log_range_id_fkey FOREIGN KEY (range_id) REFERENCES public.ranges(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.fetched_chunks
    ADD CONSTRAINT fetched_chunks_range_id_fkey FOREIGN KEY (range_id) REFERENCES public.ranges(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.group_leases
    ADD CONSTRAINT group_leases_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.group_leases
    ADD CONSTRAINT group_leases_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);

ALTER TABLE ONLY public.lane_log
    ADD CONSTRAINT lane_log_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.lease_log
    ADD CONSTRAINT lease_log_range_id_fkey FOREIGN KEY (range_id) REFERENCES public.ranges(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.plain_chunks
    ADD CONSTRAINT plain_chunks_range_id_fkey FOREIGN KEY (range_id) REFERENCES public.ranges(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.ranges
    ADD CONSTRAINT ranges_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.ranges
    ADD CONSTRAINT ranges_node_id_fkey FOREIGN KEY (node_id) REFERENCES public.nodes(id);

ALTER TABLE ONLY public.snapshot_log
    ADD CONSTRAINT snapshot_log_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id) ON DELETE CASCADE;

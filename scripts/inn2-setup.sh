#!/usr/bin/env bash
# Install, configure and start INN2 on loopback as the real news server for tests and benchmarks.
#
# Idempotent: run it as often as you like; it installs inn2 only when missing, rewrites only the
# configuration it owns (restarting the daemons when that changed), and starts only what is down.
# Needs root (CI runs it as root on a fresh Debian machine). Network: 127.0.0.1 only.
#
# Usage:  scripts/inn2-setup.sh [GROUP ...]     # set up, start, then create each GROUP (if new)
#         scripts/inn2-setup.sh --status         # print the ports and whether each answers
#
# Ports (all bound to 127.0.0.1):
#   11190  innd: the feed port. From localhost, IHAVE and MODE STREAM/TAKETHIS are accepted
#          (incoming.conf's "peer ME"): the fast way to post test articles (~18k/s).
#   11119  nnrpd, plain reader: no authentication, posting allowed, STARTTLS offered (test CA).
#   11120  nnrpd, AUTHINFO-only reader: every command but AUTHINFO/CAPABILITIES/MODE needs
#          AUTHINFO USER/PASS; plain-text authentication allowed on this unencrypted port.
#          User "indexer", password "indexer-secret" (ckpasswd against $TEST_DIR/passwd).
#   11563  nnrpd, NNTPS: TLS from the first byte (nnrpd -S), certificate signed by the test CA.
#
# Files:  $TEST_DIR (default /var/lib/usenet-indexer-inn2, or $INN2_TEST_DIR):
#   tls/ca.crt       the test CA: pass it as ca_file to trust the TLS port (CN/SAN 127.0.0.1, localhost)
#   passwd           the password file of the AUTHINFO port
#
# INN2 facts this script works around (see also the project's INN2 notes):
# - dpkg's configure step of inn2 fails while inn.conf has no domain and the host name has none:
#   we set `domain` and re-run `dpkg --configure -a`.
# - The default storage method (tradspool, one file per article) is slow for 300k articles, and
#   timecaf refuses articles past 262144 per time bucket: CNFS with one large sparse buffer.
# - nnrpdcheckart (default true) makes nnrpd stat every article before listing it in OVER; off here,
#   so OVER runs at the overview database's speed.
# - innd may take minutes to act on SIGTERM: stop it with `ctlinnd shutdown`.
# - A dead daemon may linger as <defunct> (process 1 reaps slowly) and `kill -0` still succeeds on
#   it, so "running" is judged by a port that answers, never by a pid.
set -euo pipefail

TEST_DIR="${INN2_TEST_DIR:-/var/lib/usenet-indexer-inn2}"
INND_PORT=11190
PLAIN_PORT=11119
AUTH_PORT=11120
TLS_PORT=11563
AUTH_USER=indexer
AUTH_PASSWORD=indexer-secret
DOMAIN=usenet-indexer.test
ETC=/etc/news
BIN=/usr/lib/news/bin
CHANGED=0

log() { printf 'inn2-setup: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts daemons as user news)"

port_answers() {  # port -> 0 when something accepts a TCP connection on 127.0.0.1:port
    timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

status() {
    local name port
    for name in innd:$INND_PORT plain:$PLAIN_PORT auth:$AUTH_PORT tls:$TLS_PORT; do
        port=${name#*:}
        if port_answers "$port"; then echo "${name%%:*} 127.0.0.1:$port up"; else echo "${name%%:*} 127.0.0.1:$port down"; fi
    done
    echo "ca_file $TEST_DIR/tls/ca.crt"
}

if [ "${1:-}" = "--status" ]; then status; exit 0; fi

# Serialise concurrent runs (pytest-xdist workers, a bench next to a test run). The daemons are
# started with fd 9 closed: a daemon that inherited it would hold the lock forever.
mkdir -p "$TEST_DIR"
exec 9>"$TEST_DIR/.setup.lock"
flock 9

# --- install ------------------------------------------------------------------------------------
if [ ! -x "$BIN/innd" ]; then
    log "installing inn2 (Debian package)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || log "apt-get update failed; trying the install with the lists we have"
    # The configure step is expected to fail here (no domain yet); it is finished below.
    apt-get install -y -qq -o Dpkg::Options::=--force-confold inn2 openssl >/dev/null 2>&1 || true
    [ -x "$BIN/innd" ] || die "apt-get install inn2 did not install $BIN/innd"
fi

# --- configuration we own -----------------------------------------------------------------------
# write_if_changed PATH MODE OWNER < content: replaces the file only when its content differs.
write_if_changed() {
    local path=$1 mode=$2 owner=$3 tmp
    tmp=$(mktemp)
    cat >"$tmp"
    if [ -f "$path" ] && cmp -s "$tmp" "$path"; then
        rm -f "$tmp"
    else
        install -m "$mode" -o "${owner%:*}" -g "${owner#*:}" "$tmp" "$path"
        rm -f "$tmp"
        CHANGED=1
        log "wrote $path"
    fi
}

# set_conf KEY VALUE: one "key: value" line in inn.conf, replacing a commented or earlier setting.
set_conf() {
    local key=$1 value=$2 line
    line=$(printf '%-29s%s' "$key:" "$value")
    if grep -qxF "$line" "$ETC/inn.conf"; then return; fi
    if grep -qE "^#?${key}:" "$ETC/inn.conf"; then
        sed -i -E "s|^#?${key}:.*|${line}|" "$ETC/inn.conf"
    else
        printf '%s\n' "$line" >>"$ETC/inn.conf"
    fi
    CHANGED=1
}

[ -f "$ETC/inn.conf" ] || die "$ETC/inn.conf is missing after installing inn2"

# TLS material: a test CA and a server certificate for 127.0.0.1/localhost, made once.
TLS_DIR="$TEST_DIR/tls"
mkdir -p "$TLS_DIR"
if [ ! -s "$TLS_DIR/server.crt" ] || [ ! -s "$TLS_DIR/ca.crt" ]; then
    log "generating the test CA and server certificate in $TLS_DIR"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=usenet-indexer test CA" \
        -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.crt" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
        -keyout "$TLS_DIR/server.key" -out "$TLS_DIR/server.csr" >/dev/null 2>&1
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
        >"$TLS_DIR/server.ext"
    openssl x509 -req -in "$TLS_DIR/server.csr" -CA "$TLS_DIR/ca.crt" -CAkey "$TLS_DIR/ca.key" \
        -CAcreateserial -days 3650 -extfile "$TLS_DIR/server.ext" -out "$TLS_DIR/server.crt" >/dev/null 2>&1
    CHANGED=1
fi
# nnrpd refuses a key file readable by anyone but news.
chown news:news "$TLS_DIR/server.key" "$TLS_DIR/server.crt"
chmod 600 "$TLS_DIR/server.key"
chmod 644 "$TLS_DIR/server.crt" "$TLS_DIR/ca.crt"
chmod 755 "$TEST_DIR" "$TLS_DIR"

set_conf domain "$DOMAIN"
set_conf pathhost "inn2.$DOMAIN"
set_conf port "$INND_PORT"
set_conf bindaddress "127.0.0.1"
set_conf bindaddress6 '"::1"'
set_conf ovmethod tradindexed
set_conf enableoverview true
set_conf nnrpdcheckart false
set_conf artcutoff 0
set_conf maxartsize 0  # unlimited: a test posts an article with a 1 MB overview line
# Readers are never refused for the machine's load (nnrpd's default limit is 16): a loaded 2-core
# machine running the suite beside benchmarks crossed it, and INN2 answered "load at 19.65, try later".
set_conf nnrpdloadlimit 0
set_conf tlscafile "$TLS_DIR/ca.crt"
set_conf tlscertfile "$TLS_DIR/server.crt"
set_conf tlskeyfile "$TLS_DIR/server.key"

# CNFS: one cyclic buffer, created sparse (disk is used only as articles arrive). timecaf looked
# simpler but refuses an article once one time bucket holds 262144 of them (CAF_ERR_ARTWONTFIT),
# which bulk posting at ~10k/s reaches in half a minute. A CNFS buffer wraps silently when full,
# overwriting the oldest articles: 8 GB holds ~2M small test articles.
CYCBUFF_DIR=/var/spool/news/cycbuffs
CYCBUFF_KB=8388608
mkdir -p "$CYCBUFF_DIR"
if [ ! -f "$CYCBUFF_DIR/one" ]; then
    truncate -s "${CYCBUFF_KB}K" "$CYCBUFF_DIR/one"
    CHANGED=1
fi
chown -R news:news "$CYCBUFF_DIR"
chmod 664 "$CYCBUFF_DIR/one"

write_if_changed "$ETC/cycbuff.conf" 644 root:news <<EOF
# Managed by usenet-indexer's scripts/inn2-setup.sh.
cycbuffupdate:25
refreshinterval:30
cycbuff:ONE:$CYCBUFF_DIR/one:$CYCBUFF_KB
metacycbuff:BIG:ONE
EOF

write_if_changed "$ETC/storage.conf" 644 root:news <<'EOF'
# Managed by usenet-indexer's scripts/inn2-setup.sh: every article in the CNFS buffer BIG.
method cnfs {
    newsgroups: *
    class: 1
    options: BIG
}
EOF

write_if_changed "$ETC/readers.conf" 644 root:news <<'EOF'
# Managed by usenet-indexer's scripts/inn2-setup.sh: the plain and TLS reader ports.
# Posting is the P of "access: RPA". (A "post:" line next to "newsgroups:" is a configuration
# error, and nnrpd then answers every connection with "400 NNTP server unavailable".)
auth "localhost" {
    hosts: "localhost, 127.0.0.1, ::1, stdin"
    default: "<localhost>"
}
access "localhost" {
    users: "<localhost>"
    newsgroups: "*"
    access: RPA
    addcanlockuser: none
}
EOF

write_if_changed "$ETC/readers-auth.conf" 644 root:news <<EOF
# Managed by usenet-indexer's scripts/inn2-setup.sh: the AUTHINFO-only port ($AUTH_PORT).
# No default identity, so nothing but AUTHINFO works before a password from $TEST_DIR/passwd.
auth "passwordfile" {
    hosts: "localhost, 127.0.0.1, ::1"
    auth: "ckpasswd -f $TEST_DIR/passwd"
}
access "passwordfile" {
    users: "$AUTH_USER"
    newsgroups: "*"
    access: RPA
}
EOF

if [ ! -s "$TEST_DIR/passwd" ] || ! grep -q "^$AUTH_USER:" "$TEST_DIR/passwd"; then
    printf '%s:%s\n' "$AUTH_USER" "$(openssl passwd -6 "$AUTH_PASSWORD")" >"$TEST_DIR/passwd"
    CHANGED=1
fi
chown news:news "$TEST_DIR/passwd"
chmod 640 "$TEST_DIR/passwd"

# --- finish the package's configure step (needs the domain set above) ---------------------------
if dpkg -s inn2 2>/dev/null | grep -q '^Status: .* half-configured\|^Status: .* unpacked'; then
    log "finishing inn2's configuration (dpkg --configure -a)"
    DEBIAN_FRONTEND=noninteractive dpkg --configure -a >/dev/null 2>&1 \
        || die "dpkg --configure -a failed for inn2; run it by hand to see why"
fi

mkdir -p /run/news
chown news:news /run/news

# The history database must exist before innd starts (the package's postinst makes it; this is for
# a machine where that step was interrupted).
if [ ! -f /var/lib/news/history ]; then
    su news -s /bin/sh -c "touch /var/lib/news/history && $BIN/makedbz -i -o" >/dev/null
fi

# --- (re)start ----------------------------------------------------------------------------------
innd_up() { "$BIN/ctlinnd" -t 5 mode >/dev/null 2>&1 && port_answers "$INND_PORT"; }

stop_all() {
    local port pid innd_pid
    # innd unlinks its pid file as it exits, after its ports close: a new innd started before the old
    # one is gone lost its pid file (bench/e2e.py reads it), so the old process is waited for too.
    innd_pid=$(cat /run/news/innd.pid 2>/dev/null || pgrep -x innd || true)
    if "$BIN/ctlinnd" -t 5 mode >/dev/null 2>&1; then
        "$BIN/ctlinnd" -t 30 shutdown "usenet-indexer inn2-setup: configuration changed" >/dev/null 2>&1 || true
    fi
    for port in "$PLAIN_PORT" "$AUTH_PORT" "$TLS_PORT"; do
        pid=$(cat "/run/news/nnrpd-$port.pid" 2>/dev/null || true)
        if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
        rm -f "/run/news/nnrpd-$port.pid"
    done
    for _ in $(seq 1 100); do
        port_answers "$INND_PORT" || port_answers "$PLAIN_PORT" || port_answers "$AUTH_PORT" \
            || port_answers "$TLS_PORT" || { [ -n "$innd_pid" ] && kill -0 "$innd_pid" 2>/dev/null; } \
            || return 0
        sleep 0.2
    done
    die "the INN2 daemons did not stop within 20 s"
}

if [ "$CHANGED" = 1 ] && { innd_up || port_answers "$PLAIN_PORT"; }; then
    log "configuration changed: restarting the INN2 daemons"
    stop_all
fi

if ! innd_up; then
    log "starting innd on 127.0.0.1:$INND_PORT"
    rm -f /run/news/innd.pid
    su news -s /bin/sh -c "$BIN/innd" 9>&- || die "innd did not start; see /var/log/news/news.err"
    for _ in $(seq 1 150); do innd_up && break; sleep 0.2; done
    innd_up || die "innd started but does not answer ctlinnd or port $INND_PORT; see /var/log/news/news.err"
fi

start_nnrpd() {  # port, extra flags
    local port=$1
    shift
    if port_answers "$port"; then return; fi
    log "starting nnrpd on 127.0.0.1:$port $*"
    rm -f "/run/news/nnrpd-$port.pid"
    su news -s /bin/sh -c "$BIN/nnrpd -D -n -4 127.0.0.1 -p $port $*" 9>&- \
        || die "nnrpd on port $port did not start; see /var/log/news/news.err"
    for _ in $(seq 1 100); do port_answers "$port" && return; sleep 0.1; done
    die "nnrpd on port $port started but does not accept connections; see /var/log/news/news.err"
}
start_nnrpd "$PLAIN_PORT"
start_nnrpd "$AUTH_PORT" -c "$ETC/readers-auth.conf"
start_nnrpd "$TLS_PORT" -S

# --- groups -------------------------------------------------------------------------------------
for group in "$@"; do
    case "$group" in
        *[!a-z0-9.+_-]*|'') die "not a newsgroup name: '$group'" ;;
    esac
    if ! grep -q "^$group " /var/lib/news/active; then
        "$BIN/ctlinnd" -t 30 newgroup "$group" y usenet-indexer >/dev/null \
            || die "ctlinnd newgroup $group failed"
    fi
done

log "ready: innd 127.0.0.1:$INND_PORT, readers $PLAIN_PORT (plain) $AUTH_PORT (AUTHINFO) $TLS_PORT (TLS)"

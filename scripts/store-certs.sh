#!/usr/bin/env bash
# Makes the certificates a store served across hosts needs (mutual TLS,
# docs/control-plane.md "Securing the store"), with openssl, in the current
# directory:
#   ca.pem, ca-key.pem            the store's own CA (keep ca-key.pem offline)
#   server.pem, server-key.pem    the embedded etcd's certificate, naming ADDR and 127.0.0.1
#   NAME.pem, NAME-key.pem        one client certificate per NAME (controller, muxes, operators)
# Usage: scripts/store-certs.sh ADDR NAME[=ROLE[@NODEADDR,...]]...
#   e.g. scripts/store-certs.sh 198.18.0.2 ctl=controller@198.18.0.2 mux1=mux@198.18.0.11 server1=agent@198.18.0.21 alice=admin bob=read
# NAME=ROLE also makes the certificate an identity (docs/operations.md,
# "Trust boundaries"): its role as the URI SAN beamer://role/ROLE.
# controller, mux, agent: a node; a mux or an agent serves its node API with
# it, so it names the addresses the controller dials (NODEADDR); a
# controller@ADDR serves the management API at ADDR with it (without @ADDR
# it is only a client). The same certificate is the node's store client
# certificate. read, admin: an operator of the management API (`beamer ctl
# --cert`): read may list, show, look up and watch; admin may also change.
# An existing CA is reused, so running it again later adds client certificates.
set -euo pipefail
if [ $# -lt 2 ]; then
	echo "usage: $0 ADDR NAME...  (ADDR: the address clients dial the store at; NAME: one client certificate each)" >&2
	exit 2
fi
addr=$1
shift
command -v openssl >/dev/null || { echo "$0: needs openssl (apt-get install openssl)" >&2; exit 1; }
days=825
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; chmod 600 "$1"; }
# sign NAME SUBJECT EXTENSIONS: a key, a request and a certificate signed by the CA.
sign() {
	key "$1-key.pem"
	openssl req -new -key "$1-key.pem" -subj "/CN=$2" -out "$1.csr"
	openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days "$days" \
		-out "$1.pem" -extfile <(printf '%s\n' "$3") 2>/dev/null
	rm -f "$1.csr"
}
if [ ! -f ca.pem ] || [ ! -f ca-key.pem ]; then
	key ca-key.pem
	openssl req -x509 -new -key ca-key.pem -subj /CN=beamer-store-ca -days 3650 -out ca.pem
fi
case $addr in
*[!0-9.]*) san="DNS:$addr" ;;
*) san="IP:$addr" ;;
esac
# clientAuth too: etcd's gateway dials itself with the server certificate.
sign server beamer-store "subjectAltName=$san,IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
names=()
for arg in "$@"; do
	name=${arg%%=*}
	role= addrs=
	if [ "$name" != "$arg" ]; then
		role=${arg#*=}
		if [ "${role#*@}" != "$role" ]; then
			addrs=${role#*@}
			role=${role%%@*}
		fi
	fi
	case $name in
	server | ca | "" | *[!A-Za-z0-9_.-]*) echo "$0: client name $name: use letters, digits, . _ - (not server or ca)" >&2; exit 2 ;;
	esac
	case $role in
	"") ext="extendedKeyUsage=clientAuth" ;;
	read | admin) ext="extendedKeyUsage=clientAuth
subjectAltName=URI:beamer://role/$role" ;;
	controller | mux | agent)
		if [ -z "$addrs" ]; then
			[ "$role" = controller ] || { echo "$0: $arg: a $role serves its node API: name its address(es), $name=$role@ADDR[,ADDR]" >&2; exit 2; }
			ext="extendedKeyUsage=clientAuth
subjectAltName=URI:beamer://role/controller"
			sign "$name" "$name" "$ext"
			names+=("$name")
			continue
		fi
		sans="URI:beamer://role/$role"
		IFS=, read -r -a list <<<"$addrs"
		for a in "${list[@]}"; do
			case $a in
			*[!0-9A-Fa-f.:]*) sans="$sans,DNS:$a" ;;
			*) sans="$sans,IP:$a" ;;
			esac
		done
		ext="extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$sans" ;;
	*) echo "$0: $arg: role $role: want controller, mux, agent, read or admin" >&2; exit 2 ;;
	esac
	sign "$name" "$name" "$ext"
	names+=("$name")
done
echo "store-certs: ca.pem, server.pem and $(printf '%s.pem ' "${names[@]}")(keys beside them) in $(pwd)"

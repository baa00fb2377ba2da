//! The credential files a proven read must not hand to the model (ADR 0026, "Credential reads need
//! an approval"): one row per kind, with a concrete example (what a glob or a folder is tried
//! against) and why it is a secret. Patterns are matched against a normalised absolute path; `*` is
//! any run of characters, `/` included, so `*/.ssh/id_*` is any home's key and `*/*.key` any file
//! named `*.key` anywhere.

/// One kind of credential file.
pub struct Entry {
    /// The paths, `*` any run of characters.
    pub pattern: &'static str,
    /// One path the pattern matches, where such a file usually is: globs, folders searched
    /// recursively and `find` are tried against it.
    pub example: &'static str,
    /// Why its contents are a secret.
    pub why: &'static str,
}

const fn e(pattern: &'static str, example: &'static str, why: &'static str) -> Entry {
    Entry { pattern, example, why }
}

/// Every credential file merlya knows, grouped by what it holds.
pub const TABLE: &[Entry] = &[
    // Password hashes (backups of them: see BACKUP_SUFFIXES).
    e("/etc/shadow", "/etc/shadow", "local password hashes"),
    e("/etc/gshadow", "/etc/gshadow", "group password hashes"),
    e("/etc/security/opasswd", "/etc/security/opasswd", "old password hashes pam_pwhistory keeps"),
    e("/var/backups/*shadow*", "/var/backups/shadow.bak", "Debian's daily copy of the password hashes"),
    e("*/smbpasswd", "/etc/samba/smbpasswd", "Samba NT hashes"),
    e("*/secrets.tdb", "/var/lib/samba/private/secrets.tdb", "Samba machine account secret"),
    e("*/passdb.tdb", "/var/lib/samba/private/passdb.tdb", "Samba password database"),
    e("*/.htpasswd", "/etc/apache2/.htpasswd", "web basic-auth password hashes"),
    // Private keys.
    e("*/.ssh/*", "/root/.ssh/id_rsa", "SSH private keys"),
    e("*/.ssh/id_*", "/home/user/.ssh/id_ed25519", "SSH private keys"),
    e("/etc/ssh/*_key", "/etc/ssh/ssh_host_ed25519_key", "SSH host private keys"),
    e("*/*.key", "/etc/apache2/ssl/server.key", "TLS or other private key"),
    e("*/*-key.pem", "/etc/kubernetes/pki/etcd/server-key.pem", "private key in PEM"),
    e("*/*_key.pem", "/etc/app/tls/client_key.pem", "private key in PEM"),
    e("*/key.pem", "/etc/docker/certs.d/key.pem", "private key in PEM"),
    e("*/*.key.pem", "/etc/app/server.key.pem", "private key in PEM"),
    e("*/privkey*.pem", "/etc/letsencrypt/live/example/privkey.pem", "Let's Encrypt private key"),
    e("*/privkey*.pem", "/etc/letsencrypt/archive/example/privkey1.pem", "Let's Encrypt private key"),
    e("*/private_key*", "/etc/letsencrypt/accounts/acme/directory/abc/private_key.json", "ACME account key"),
    e("*/private/*", "/etc/ssl/private/server.key", "a `private` folder holds private keys"),
    e("*/private/*", "/etc/pki/tls/private/server.key", "a `private` folder holds private keys"),
    e("*/private/*", "/etc/pki/CA/private/cakey.pem", "a `private` folder holds private keys"),
    e("*/private/*", "/etc/dovecot/private/dovecot.pem", "a `private` folder holds private keys"),
    e("*/private/*", "/etc/swanctl/private/host.pem", "a `private` folder holds private keys"),
    e("*/private_keys/*", "/etc/puppetlabs/puppet/ssl/private_keys/web01.pem", "Puppet agent keys"),
    e("*/*.p12", "/etc/app/client.p12", "PKCS#12 bundle with its private key"),
    e("*/*.pfx", "/etc/app/client.pfx", "PKCS#12 bundle with its private key"),
    e("*/*.jks", "/etc/app/keystore.jks", "Java keystore"),
    e("*/*keystore*", "/opt/app/conf/keystore", "Java keystore"),
    e("*/*_secret_key", "/var/lib/tor/hidden_service/hs_ed25519_secret_key", "Tor onion service key"),
    e("*/.gnupg/private-keys*", "/root/.gnupg/private-keys-v1.d/a.key", "GnuPG secret keys"),
    e("*/secring.*", "/root/.gnupg/secring.gpg", "GnuPG secret keys"),
    e("/etc/haproxy/*.pem", "/etc/haproxy/site.pem", "HAProxy bundles key and certificate"),
    e("/etc/haproxy/certs/*", "/etc/haproxy/certs/site.pem", "HAProxy bundles key and certificate"),
    e("/etc/docker/key.json", "/etc/docker/key.json", "Docker daemon identity key"),
    e("/var/lib/docker/swarm/*", "/var/lib/docker/swarm/certificates/swarm-node.key", "swarm node key"),
    // Clusters.
    e("/etc/kubernetes/*.conf*", "/etc/kubernetes/admin.conf", "kubeconfig with a client key"),
    e("/etc/kubernetes/pki/*", "/etc/kubernetes/pki/ca.key", "cluster CA and component keys"),
    e("/var/lib/kubelet/pki/*", "/var/lib/kubelet/pki/kubelet-client-current.pem", "kubelet client key"),
    e("/var/lib/kubelet/kubeconfig*", "/var/lib/kubelet/kubeconfig", "kubelet kubeconfig"),
    e("*/.kube/*", "/root/.kube/config", "kubeconfig with tokens or client keys"),
    e("*/.kube/*", "/home/user/.kube/config", "kubeconfig with tokens or client keys"),
    e("/etc/rancher/*", "/etc/rancher/k3s/k3s.yaml", "k3s/rke2 kubeconfig and join token"),
    e("/etc/rancher/*", "/etc/rancher/rke2/rke2.yaml", "k3s/rke2 kubeconfig and join token"),
    e("/var/lib/rancher/*/server/*", "/var/lib/rancher/k3s/server/token", "k3s/rke2 server token and keys"),
    e("/var/lib/rancher/*kubeconfig*", "/var/lib/rancher/rke2/agent/kubelet.kubeconfig", "agent kubeconfig"),
    e("/var/run/secrets/*", "/var/run/secrets/kubernetes.io/serviceaccount/token", "service account token"),
    e("/run/secrets/*", "/run/secrets/db_password", "container secrets"),
    e("/etc/etcd/*", "/etc/etcd/pki/server.key", "etcd keys and configuration"),
    e("/var/lib/etcd/*", "/var/lib/etcd/member/snap/db", "etcd data: every Kubernetes secret"),
    // systemd credentials.
    e("/run/credentials/*", "/run/credentials/app.service/db_password", "systemd service credentials"),
    e("/etc/credstore*", "/etc/credstore/db_password", "systemd credential store"),
    e("/var/lib/systemd/credential.secret", "/var/lib/systemd/credential.secret", "systemd credential key"),
    // VPN and network secrets.
    e("/etc/wireguard/*", "/etc/wireguard/wg0.conf", "WireGuard private keys"),
    e("*/ipsec.secrets*", "/etc/ipsec.secrets", "IPsec pre-shared keys"),
    e("*/ipsec.secrets*", "/etc/strongswan/ipsec.secrets", "IPsec pre-shared keys"),
    e("/etc/ipsec.d/private/*", "/etc/ipsec.d/private/host.pem", "IPsec private keys"),
    e("/etc/ppp/*-secrets", "/etc/ppp/chap-secrets", "PPP passwords"),
    e("/etc/ppp/*-secrets", "/etc/ppp/pap-secrets", "PPP passwords"),
    e(
        "/etc/NetworkManager/system-connections/*",
        "/etc/NetworkManager/system-connections/office.nmconnection",
        "Wi-Fi and VPN passwords",
    ),
    e("*/wpa_supplicant*.conf", "/etc/wpa_supplicant/wpa_supplicant.conf", "Wi-Fi passwords"),
    e("/etc/openvpn/*", "/etc/openvpn/server/server.key", "OpenVPN keys"),
    // Directory services and Kerberos.
    e("*ldap.secret", "/etc/ldap.secret", "LDAP bind password"),
    e("*ldap.secret", "/etc/pam_ldap.secret", "LDAP bind password"),
    e("/etc/sssd/*", "/etc/sssd/sssd.conf", "SSSD bind password"),
    e("/etc/nslcd.conf", "/etc/nslcd.conf", "LDAP bind password"),
    e("*/*.keytab", "/etc/krb5.keytab", "Kerberos keys"),
    e("/var/lib/krb5kdc/*", "/var/lib/krb5kdc/principal", "Kerberos KDC database"),
    // Mail.
    e("/etc/postfix/sasl_passwd*", "/etc/postfix/sasl_passwd", "SMTP relay password"),
    // Histories: what was typed, passwords included.
    e("*/.*_history", "/root/.bash_history", "shell history"),
    e("*/.*_history", "/home/user/.bash_history", "shell history"),
    e("*/.*_history", "/root/.mysql_history", "database client history"),
    e("*/.*_history", "/root/.psql_history", "database client history"),
    e("*/.zhistory", "/root/.zhistory", "shell history"),
    e("*/.lesshst", "/root/.lesshst", "less search history"),
    e("*/.viminfo", "/root/.viminfo", "vim registers and history"),
    // Application and deployment secrets.
    e("*/.env", "/srv/app/.env", "application secrets"),
    e("*/.env.*", "/srv/app/.env.production", "application secrets"),
    e("*/*.tfstate*", "/opt/terraform/terraform.tfstate", "Terraform state holds every secret it created"),
    e("*/.terraform.d/credentials*", "/home/user/.terraform.d/credentials.tfrc.json", "Terraform Cloud token"),
    e("*/.netrc", "/root/.netrc", "login passwords"),
    e("*/.git-credentials", "/root/.git-credentials", "git passwords and tokens"),
    e("*/.docker/config.json", "/root/.docker/config.json", "registry tokens"),
    e("*/.aws/*", "/root/.aws/credentials", "AWS keys and SSO tokens"),
    e("*/.aws/*", "/home/user/.aws/credentials", "AWS keys and SSO tokens"),
    e("*/.config/gcloud/*", "/home/user/.config/gcloud/credentials.db", "Google Cloud tokens"),
    e("*/.azure/*", "/home/user/.azure/msal_token_cache.json", "Azure tokens"),
    e("*/.oci/*", "/home/user/.oci/oci_api_key.pem", "Oracle Cloud keys"),
    e("*/.config/gh/hosts.yml", "/home/user/.config/gh/hosts.yml", "GitHub token"),
    e("*/.config/rclone/*", "/home/user/.config/rclone/rclone.conf", "storage passwords"),
    e("*/.npmrc", "/home/user/.npmrc", "registry token"),
    e("*/.pypirc", "/home/user/.pypirc", "registry password"),
    e("*/.s3cfg", "/home/user/.s3cfg", "S3 keys"),
    e("*/.ansible/*", "/home/user/.ansible/vault_pass.txt", "Ansible vault password"),
    e("*vault_pass*", "/etc/ansible/vault_pass.txt", "Ansible vault password"),
    e("*/.vault-token", "/root/.vault-token", "Vault token"),
    e("*/.pgpass", "/root/.pgpass", "PostgreSQL passwords"),
    e("*/.pgpass", "/var/lib/postgresql/.pgpass", "PostgreSQL passwords"),
    e("*/.my.cnf", "/root/.my.cnf", "MySQL password"),
    e("*/.mylogin.cnf", "/root/.mylogin.cnf", "MySQL passwords"),
    e("/etc/mysql/debian.cnf", "/etc/mysql/debian.cnf", "MySQL maintenance password"),
    e("/etc/pgbouncer/userlist.txt", "/etc/pgbouncer/userlist.txt", "PgBouncer passwords"),
    e("*/.erlang.cookie", "/var/lib/rabbitmq/.erlang.cookie", "Erlang cluster secret"),
    e("/etc/redis/*.conf", "/etc/redis/redis.conf", "Redis requirepass"),
    e("/etc/redis.conf", "/etc/redis.conf", "Redis requirepass"),
    e("*/wp-config.php", "/var/www/html/wp-config.php", "WordPress database password and salts"),
    e("*/config/database.yml", "/srv/app/config/database.yml", "Rails database password"),
    e(
        "/var/lib/docker/containers/*/config.v2.json",
        "/var/lib/docker/containers/abc/config.v2.json",
        "a container's environment",
    ),
    e("/var/lib/jenkins/secrets/*", "/var/lib/jenkins/secrets/initialAdminPassword", "Jenkins secrets"),
    e("*/jenkins/credentials.xml", "/var/lib/jenkins/credentials.xml", "Jenkins credentials"),
    e("*/jenkins/secret.key*", "/var/lib/jenkins/secret.key", "Jenkins master key"),
    e("/etc/gitlab/gitlab-secrets.json", "/etc/gitlab/gitlab-secrets.json", "GitLab secrets"),
    e("/etc/gitlab/initial_root_password", "/etc/gitlab/initial_root_password", "GitLab root password"),
    e("/etc/grafana/grafana.ini", "/etc/grafana/grafana.ini", "Grafana admin password"),
    e("/var/lib/grafana/grafana.db", "/var/lib/grafana/grafana.db", "Grafana users and data source passwords"),
    e("/etc/vault.d/*", "/etc/vault.d/vault.hcl", "Vault configuration and unseal material"),
    e("/var/lib/vault/*", "/var/lib/vault/raft/vault.db", "Vault data"),
    e("/opt/vault/*", "/opt/vault/data/vault.db", "Vault data"),
    e("/etc/consul.d/*", "/etc/consul.d/encrypt.hcl", "Consul gossip key and tokens"),
    e("/var/lib/consul/*", "/var/lib/consul/acl-tokens.json", "Consul data and tokens"),
    e("/opt/consul/*", "/opt/consul/acl-tokens.json", "Consul data and tokens"),
    e("/etc/salt/pki/*", "/etc/salt/pki/master/master.pem", "Salt master and minion keys"),
    e("/var/lib/puppet/ssl/private_keys/*", "/var/lib/puppet/ssl/private_keys/web01.pem", "Puppet agent keys"),
    e("/etc/ceph/*.keyring", "/etc/ceph/ceph.client.admin.keyring", "Ceph keys"),
    e("/var/lib/ceph/*keyring*", "/var/lib/ceph/mon/ceph-a/keyring", "Ceph keys"),
    // merlya's own home: its audit key, database, configuration and logs.
    e("*/.merlya", "/root/.merlya", "merlya's own files"),
    e("*/.merlya/*", "/root/.merlya/audit.key", "merlya's own files"),
    e("*/.merlya/*", "/home/user/.merlya/merlya.db", "merlya's own files"),
];

/// Files inside credential folders that are public: their reading stays a read.
pub const PUBLIC: &[&str] = &[
    "*.pub",
    "*/.ssh/known_hosts*",
    "*/.ssh/authorized_keys*",
    "*/.ssh/config",
    "*/.ssh/rc",
    "*.crt",
    "*/.kube/cache/*",
];

/// Endings editors, package managers and admins give a copy of a file: the copy is the secret
/// too (`/etc/shadow-`, `/etc/shadow~`, `shadow.bak`, vim's `.shadow.swp`).
pub const BACKUP_SUFFIXES: &[&str] = &[
    "-",
    "~",
    ".bak",
    ".orig",
    ".old",
    ".save",
    ".swp",
    ".swo",
    ".dpkg-old",
    ".dpkg-dist",
    ".rpmsave",
    ".rpmnew",
    ".1",
];

package database

// The instance manager's environment (temporary copy until internal/instance lands).
const (
	envEngine              = "STEWARD_ENGINE"
	envDataDir             = "STEWARD_DATA_DIR"
	envConfigDir           = "STEWARD_CONFIG_DIR"
	envRunDir              = "STEWARD_RUN_DIR"
	envPort                = "STEWARD_PORT"
	envStatusAddr          = "STEWARD_STATUS_ADDR"
	envPodName             = "POD_NAME"
	envPrimaryHost         = "STEWARD_PRIMARY_HOST"
	envPrimaryPort         = "STEWARD_PRIMARY_PORT"
	envDatabase            = "STEWARD_DATABASE"
	envSuperuserUsername   = "STEWARD_SUPERUSER_USERNAME"
	envSuperuserPassword   = "STEWARD_SUPERUSER_PASSWORD"
	envOwnerUsername       = "STEWARD_OWNER_USERNAME"
	envOwnerPassword       = "STEWARD_OWNER_PASSWORD"
	envReplicationUsername = "STEWARD_REPLICATION_USERNAME"
	envReplicationPassword = "STEWARD_REPLICATION_PASSWORD"
)

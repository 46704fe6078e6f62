"""What reading a YAML file with OmegaConf can raise, for readers that skip a file they cannot read."""
import yaml
from omegaconf.errors import OmegaConfBaseException

# The file (OSError; undecodable text: ValueError), its syntax (YAMLError), its content (an interpolation:
# OmegaConfBaseException; a list where a mapping was expected: AttributeError).
YAML_READ_ERRORS = (OSError, ValueError, yaml.YAMLError, OmegaConfBaseException, AttributeError)

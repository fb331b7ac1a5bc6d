import Noise
import Testing

"""The Kubernetes version a manifest targets and the feature gates it assumes, as the checks and
`hetrun plan --k8s-version X.Y --feature-gates NAME=true` name them."""

from dataclasses import dataclass, field

# Feature gates whose default changes inside the versions hetrun emits for (1.31 and later):
# name -> (the first version with the gate, the first version where it is on by default).
# KEP-5307 ContainerRestartRules: alpha 1.34, beta (on) 1.35, GA 1.36.
# KEP-5532 RestartAllContainersOnContainerExits: alpha 1.35, beta (on) 1.36.
GATES = {
    "ContainerRestartRules": ((1, 34), (1, 35)),
    "RestartAllContainersOnContainerExits": ((1, 35), (1, 36)),
}


@dataclass(frozen=True)
class Target:
    version: tuple = (1, 31)
    gates: frozenset = field(default_factory=frozenset)  # gates turned on explicitly

    @staticmethod
    def parse(text, gates=()):
        major, minor = (int(part) for part in text.split("."))
        return Target((major, minor), frozenset(gates))

    def enabled(self, gate):
        first, default_on = GATES[gate]
        if self.version >= default_on:
            return True
        return self.version >= first and gate in self.gates

    def __str__(self):
        gates = f" with {','.join(sorted(self.gates))}" if self.gates else ""
        return f"{self.version[0]}.{self.version[1]}{gates}"

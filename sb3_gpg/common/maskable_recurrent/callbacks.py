from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback

from sb3_gpg.common.maskable_recurrent.evaluation import CarriedStates


class MaskableRecurrentEvalCallback(MaskableEvalCallback):
    """
    sb3-contrib's ``MaskableEvalCallback`` (same arguments) whose evaluations carry the LSTM states from step to step
    under masks: see ``sb3_gpg.common.maskable_recurrent.evaluation``. It evaluates models without LSTM states (e.g.
    MaskableGPG) as ``MaskableEvalCallback`` does.
    """

    def _on_step(self) -> bool:
        model = self.model
        # MaskableEvalCallback evaluates self.model; the model's own methods (save, logger, ...) stay reachable
        self.model = CarriedStates(model)  # type: ignore[assignment]  # the model, behind a predict of its own
        try:
            return super()._on_step()
        finally:
            self.model = model

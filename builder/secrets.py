"""The Secrets page: members keep their organization's secrets here (create, replace, delete).

Plain server-rendered forms (no script), so it works under a strict CSP. Values are typed into
a password field, saved through keeperstate.secrets.store and never rendered again: the page
lists names and dates only.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from keeperstate.accounts.access import organizations_of
from keeperstate.accounts.models import Organization
from keeperstate.core.errors import CodedError, form_checked
from keeperstate.secrets.names import MAX_SECRET_BYTES, check_name, check_value
from keeperstate.secrets.store import secret_delete, secret_put, secrets_of


class SecretForm(forms.Form):
    organization = forms.ModelChoiceField(queryset=Organization.objects.none(), empty_label=None, label="Organization")
    name = forms.CharField(
        max_length=64, label="Name", widget=forms.TextInput(attrs={"placeholder": "API_KEY", "autocomplete": "off"}),
        help_text="Letters, digits and _; fields use it as <<@__secrets:Secrets.NAME>>. An existing name is replaced.",
    )
    value = forms.CharField(
        strip=False, label="Value", max_length=MAX_SECRET_BYTES,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted; nobody can read it back, here or in the API.",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        field = cast(forms.ModelChoiceField, self.fields["organization"])
        field.queryset = organizations_of(user).order_by("name")
        if field.queryset.count() == 1:
            field.widget = forms.HiddenInput()
            field.initial = field.queryset.first()

    def clean_name(self) -> str:
        return form_checked(check_name, self.cleaned_data.get("name"))

    def clean_value(self) -> str:
        return form_checked(check_value, self.cleaned_data.get("value"))



@login_required
@require_http_methods(["GET", "POST"])
def secrets_page(request: HttpRequest) -> HttpResponse:
    form = SecretForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            _secret, created = secret_put(
                organization=form.cleaned_data["organization"], name=form.cleaned_data["name"],
                value=form.cleaned_data["value"], user=request.user,
            )
        except CodedError as exc:
            form.add_error("name", exc.message)
        else:
            verb = "added" if created else "replaced"
            messages.success(request, f"Secret {form.cleaned_data['name']} {verb}.")
            return redirect("builder:secrets")
    return render(
        request,
        "builder/secrets.html",
        {"form": form, "secrets": secrets_of(organizations_of(request.user)),
         "has_organization": organizations_of(request.user).exists()},
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def secret_delete_view(request: HttpRequest, organization_id: int, name: str) -> HttpResponse:
    organization = organizations_of(request.user).filter(pk=organization_id).first()
    if organization is not None and secret_delete(organization=organization, name=name, user=request.user):
        messages.success(request, f"Secret {name} deleted; fields that use it stop resolving.")
    else:
        messages.error(request, f"There is no secret {name} to delete.")
    return redirect("builder:secrets")
